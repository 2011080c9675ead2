"""A keep-alive connection survives an early error answer (401, 404): vllm-router reuses its connections to a
worker, and real vLLM (uvicorn) reads each request's body whatever it answers. Found with vllm-router 0.1.17:
a 401 to one client, then the next client's request on that connection was parsed from the unread body."""

from __future__ import annotations

import http.client
import json
from pathlib import Path

from tests.helpers import PATIENCE_S
from tests.unit.sim_vllm.conftest import Sandbox


def test_error_answers_leave_the_connection_usable(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    proc = sandbox.start(["serve", str(checkpoints["a"]), "--served-model-name", "m", "--api-key", "k"])
    proc.wait_healthy()
    body = json.dumps({"model": "m", "prompt": "hello there", "max_tokens": 2})
    conn = http.client.HTTPConnection("127.0.0.1", proc.port, timeout=PATIENCE_S)
    answers = []
    for path, headers in [
        ("/v1/completions", {}),  # 401: no key
        ("/v1/completions/render", {"authorization": "Bearer k"}),  # 404: no such route here
        ("/v1/completions", {"authorization": "Bearer k"}),
    ]:
        conn.request("POST", path, body=body, headers={"content-type": "application/json", **headers})
        resp = conn.getresponse()
        answers.append((resp.status, resp.read()))
    conn.close()
    assert [status for status, _ in answers] == [401, 404, 200]
    assert json.loads(answers[2][1])["usage"]["completion_tokens"] == 2
