#!/usr/bin/python
# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""ascend.npu.vllm_ready: wait until a vLLM server answers /health, then /v1/models (read-only)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: vllm_ready
short_description: Wait until a vLLM serving container answers
description:
  - Polls C(GET /health) until it answers 200, then C(GET /v1/models) (with the API key read from
    I(api_key_file) on the host, never passed as a parameter) until it lists I(model).
  - Between two polls it asks Docker for the container's state and fails at once, with the last
    I(log_lines) lines of its log, when the container is no longer running (vLLM refused to start).
  - On timeout it fails with the last status seen and the container's log tail.
  - Changes nothing; in check mode it only reports what it would wait for.
options:
  url:
    description: Base URL of the server (http://ADDRESS:PORT).
    type: str
    required: true
  container:
    description: Name of the serving container on this host.
    type: str
    required: true
  model:
    description: Served model name /v1/models must list.
    type: str
    required: true
  timeout_s:
    description: Seconds to wait in all.
    type: int
    required: true
  interval_s:
    description: Seconds between two polls.
    type: float
    default: 1.0
  api_key_file:
    description: Host file holding the API key (sent as a Bearer token to /v1/models).
    type: path
  log_lines:
    description: How many log lines to return on failure.
    type: int
    default: 50
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
author: ascend-orchestrator
"""

EXAMPLES = r"""
- name: Wait for the replica
  ascend.npu.vllm_ready:
    url: http://10.0.0.1:8000
    container: vllm-r1
    model: deepseek-r1
    timeout_s: 600
"""

RETURN = r"""
waited_s:
  description: Seconds until /v1/models listed the model.
  returned: success
  type: float
log_tail:
  description: The container's last log lines (on failure).
  returned: failure
  type: list
  elements: str
"""

import json
import subprocess
import time
import urllib.error
import urllib.request
from typing import Any

from ansible.module_utils.basic import AnsibleModule


def get(url: str, key: str | None = None, timeout: float = 5.0) -> tuple[int, str]:
    req = urllib.request.Request(url)
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return int(resp.status), resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return int(exc.code), ""
    except (OSError, ValueError) as exc:
        return 0, str(exc)


def container_state(name: str) -> tuple[str, int | None]:
    proc = subprocess.run(
        ["docker", "inspect", "-f", "{{json .State}}", name], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        return "missing", None
    state = json.loads(proc.stdout or "{}")
    return str(state.get("Status") or "unknown"), state.get("ExitCode")


def log_tail(name: str, lines: int) -> list[str]:
    proc = subprocess.run(
        ["docker", "logs", "--tail", str(lines), name], capture_output=True, text=True, check=False
    )
    return (proc.stdout + proc.stderr).splitlines()[-lines:]


def lists_model(body: str, model: str) -> bool:
    try:
        data: dict[str, Any] = json.loads(body)
    except ValueError:
        return False
    return any(m.get("id") == model for m in data.get("data") or [] if isinstance(m, dict))


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "required": True},
            "container": {"type": "str", "required": True},
            "model": {"type": "str", "required": True},
            "timeout_s": {"type": "int", "required": True},
            "interval_s": {"type": "float", "default": 1.0},
            "api_key_file": {"type": "path"},
            "log_lines": {"type": "int", "default": 50},
        },
        supports_check_mode=True,
    )
    p = module.params
    if module.check_mode:
        module.exit_json(changed=False, waited_s=0.0)
    key = None
    if p["api_key_file"]:
        with open(p["api_key_file"], encoding="utf-8") as f:
            key = f.read().strip()
        module.no_log_values.add(key)
    base = p["url"].rstrip("/")
    start = time.monotonic()
    deadline = start + p["timeout_s"]
    last = "no answer yet"
    while True:
        state, code = container_state(p["container"])
        if state != "running":
            module.fail_json(
                msg=f"container {p['container']} is {state} (exit code {code}) before {base} answered: vLLM "
                f"refused to start or died; its last {p['log_lines']} log lines follow",
                log_tail=log_tail(p["container"], p["log_lines"]),
            )
        status, _ = get(f"{base}/health")
        if status == 200:
            status, body = get(f"{base}/v1/models", key)
            if status == 200 and lists_model(body, p["model"]):
                module.exit_json(changed=False, waited_s=round(time.monotonic() - start, 1))
            last = f"/health 200, /v1/models {status}" + ("" if status != 200 else f" without {p['model']}")
        else:
            last = f"/health {status or 'not listening'}"
        if time.monotonic() >= deadline:
            module.fail_json(
                msg=f"{base} was not ready within {p['timeout_s']} s (last: {last}); the last "
                f"{p['log_lines']} log lines of {p['container']} follow",
                log_tail=log_tail(p["container"], p["log_lines"]),
            )
        time.sleep(p["interval_s"])


if __name__ == "__main__":
    main()
