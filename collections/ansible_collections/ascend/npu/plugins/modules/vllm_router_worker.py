#!/usr/bin/python
# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""ascend.npu.vllm_router_worker: one replica in or out of vllm-router, in one call."""

from __future__ import annotations

DOCUMENTATION = r"""
module: vllm_router_worker
short_description: Take a replica out of vllm-router and drain it, or put it back and see it listed
description:
  - One call per rollout step instead of one per request (list, remove, drain; add, listed), through
    vllm-router's worker API without a router restart - C(GET /list_workers), C(POST /remove_worker?url=URL),
    C(POST /add_worker?url=URL), see https://github.com/vllm-project/router.
  - I(state=absent) removes I(worker_url) when the router lists it (a router that restarted since lists
    nothing, so nothing to remove), then waits until the worker's C(vllm:num_requests_running) is 0, or it
    stops answering C(/metrics), or I(drain_timeout_s) passed (the rollout replaces it either way).
  - I(state=present) adds it unless it is listed, then waits until C(/list_workers) lists it (fails after
    I(listed_timeout_s)).
  - A router that does not answer C(/list_workers) changes nothing and returns C(answered=false), as
    before the gateway phase ever ran (nothing to drain).
  - In check mode it only lists, and says whether it would change.
options:
  gateway_url:
    description: Base URL of vllm-router (http://ADDRESS:PORT).
    type: str
    required: true
  worker_url:
    description: The replica's URL as the router lists it.
    type: str
    required: true
  state:
    description: absent (out of the router, drained) or present (in it, listed).
    type: str
    choices: [absent, present]
    required: true
  drain_timeout_s:
    description: Max seconds to wait for the worker's running requests to finish after its removal.
    type: int
    default: 60
  listed_timeout_s:
    description: Max seconds to wait for the router to list an added worker.
    type: int
    default: 10
  request_timeout_s:
    description: Seconds one add or remove request may take (the router answers a remove once it is out).
    type: float
    default: 40
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
author: ascend-orchestrator
"""

EXAMPLES = r"""
- name: Out of the gateway and drained
  ascend.npu.vllm_router_worker:
    gateway_url: http://10.0.0.9:8080
    worker_url: http://10.0.0.1:8000
    state: absent
"""

RETURN = r"""
answered:
  description: Whether the router answered C(/list_workers).
  returned: always
  type: bool
listed_before:
  description: Whether the router listed the worker before the call.
  returned: when answered
  type: bool
drained_s:
  description: Seconds until the worker had no running request (I(state=absent), after a removal).
  returned: when removed
  type: float
running_left:
  description: Requests still running on the worker when the drain stopped waiting.
  returned: when removed
  type: float
listed_s:
  description: Seconds until the router listed the worker (I(state=present)).
  returned: when added
  type: float
"""

import json
import re
import time
import urllib.parse
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.npu.plugins.module_utils.http import http

_RUNNING = re.compile(r"(?m)^vllm:num_requests_running(?:\{[^}]*\})? ([^ \n]+)$")


def listed(gateway: str) -> list[str] | None:
    """The router's worker URLs; None when it does not answer."""
    status, body = http(f"{gateway}/list_workers", timeout=10)
    if status != 200:
        return None
    try:
        urls = json.loads(body).get("urls")
    except (ValueError, AttributeError):
        return None
    return [str(u) for u in urls] if isinstance(urls, list) else None


def running(worker: str) -> float | None:
    """Requests running on the worker (the sum over its engines); None when /metrics does not answer."""
    status, body = http(f"{worker}/metrics", timeout=5)
    if status != 200:
        return None
    return sum(float(v) for v in _RUNNING.findall(body))


def drain(worker: str, timeout_s: int) -> tuple[float, float]:
    """(seconds waited, requests still running) once none runs, the worker is gone, or the timeout."""
    start = time.monotonic()
    left = running(worker)
    while left and time.monotonic() - start < timeout_s:
        time.sleep(1)
        left = running(worker)
    return round(time.monotonic() - start, 2), left or 0.0


def change(p: dict[str, Any]) -> dict[str, Any]:
    """Remove or add the worker (the caller checked that it changes something)."""
    gateway, worker = p["gateway_url"].rstrip("/"), p["worker_url"]
    query = urllib.parse.urlencode({"url": worker})
    action = "remove" if p["state"] == "absent" else "add"
    status, body = http(f"{gateway}/{action}_worker?{query}", body={}, timeout=p["request_timeout_s"])
    if status // 100 != 2:
        raise RuntimeError(f"POST {gateway}/{action}_worker answered {status or 'nothing'}: {body[:200]}")
    if p["state"] == "absent":
        waited, left = drain(worker, p["drain_timeout_s"])
        return {"drained_s": waited, "running_left": left}
    start = time.monotonic()
    while worker not in (listed(gateway) or []):
        if time.monotonic() - start >= p["listed_timeout_s"]:
            waited = p["listed_timeout_s"]
            raise RuntimeError(f"{gateway}/list_workers does not list {worker} {waited} s after adding it")
        time.sleep(0.5)
    return {"listed_s": round(time.monotonic() - start, 2)}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "gateway_url": {"type": "str", "required": True},
            "worker_url": {"type": "str", "required": True},
            "state": {"type": "str", "choices": ["absent", "present"], "required": True},
            "drain_timeout_s": {"type": "int", "default": 60},
            "listed_timeout_s": {"type": "int", "default": 10},
            "request_timeout_s": {"type": "float", "default": 40.0},
        },
        supports_check_mode=True,
    )
    p = module.params
    gateway = p["gateway_url"].rstrip("/")
    urls = listed(gateway)
    if urls is None:
        module.exit_json(changed=False, answered=False, msg=f"the gateway at {gateway} does not answer")
        return
    was = p["worker_url"] in urls
    if was == (p["state"] == "present") or module.check_mode:
        module.exit_json(changed=was != (p["state"] == "present"), answered=True, listed_before=was)
    try:
        done = change(p)
    except RuntimeError as exc:
        module.fail_json(msg=str(exc), answered=True, listed_before=was)
    module.exit_json(changed=True, answered=True, listed_before=was, **done)


if __name__ == "__main__":
    main()
