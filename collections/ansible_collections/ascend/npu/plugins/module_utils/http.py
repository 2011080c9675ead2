# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""One HTTP request of the serving gates (vllm_gate, vllm_pd_roundtrip) to a vLLM API server through
Ansible's own client (ansible.module_utils.urls.open_url, as ansible-test's sanity tests ask):
JSON body, bearer key, optional X-Request-Id; (status, body text), status 0 when nothing answered (the text
says why)."""

from __future__ import annotations

import json
import urllib.error
from typing import Any

from ansible.module_utils.urls import open_url


def http(
    url: str,
    key: str | None = None,
    body: dict[str, Any] | None = None,
    timeout: float = 30.0,
    rid: str = "",
) -> tuple[int, str]:
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    if rid:
        headers["X-Request-Id"] = rid  # vllm-ascend's proxy's header: one id in both instances' logs
    data = None if body is None else json.dumps(body).encode()
    try:
        with open_url(url, data=data, headers=headers, timeout=max(timeout, 1.0)) as resp:
            return int(resp.status), resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode(errors="replace")[:300]
    except (OSError, ValueError) as exc:
        return 0, str(exc)
