"""PD disaggregation test helpers: fake vLLM servers on their own 127.0.0.x address, HTTP to them, and a
tiny two-stage proxy that builds the prefill request with vllm-ascend's own ``build_prefill_request`` (from
the saved examples/disaggregated_prefill_v1/load_balance_proxy_server_example.py@v0.23.0)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers import PATIENCE_S

from .conftest import Proc, Response, Sandbox, free_port

ROOT = Path(__file__).resolve().parents[3]
UPSTREAM = ROOT / "tests/data/upstream/vllm-ascend/v0.23.0"
CONNECTOR = UPSTREAM / "vllm_ascend/distributed/kv_transfer/kv_p2p/mooncake_connector.py"
PROXY = UPSTREAM / "examples/disaggregated_prefill_v1/load_balance_proxy_server_example.py"


def upstream_function(path: Path, name: str) -> Any:
    """A top-level function of a saved upstream file, compiled alone (it must use builtins only)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    namespace: dict[str, Any] = {}
    exec(compile(ast.Module(body=[node], type_ignores=[]), str(path), "exec"), namespace)
    return namespace[name]


build_prefill_request = upstream_function(PROXY, "build_prefill_request")


@dataclass
class HostProc(Proc):
    host: str = "127.0.0.1"


def kv_config(role: str, port: int, *, p_tp: int = 1, d_tp: int = 1, **extra: Any) -> str:
    sizes = {"prefill": {"dp_size": 2, "tp_size": p_tp}, "decode": {"dp_size": 1, "tp_size": d_tp}}
    config = {"kv_connector": "MooncakeConnectorV1", "kv_role": role, "kv_port": str(port)}
    return json.dumps({**config, "kv_connector_extra_config": sizes, **extra})


def pd_argv(checkpoint: Path, model: str, host: str) -> tuple[int, list[str], list[str]]:
    """(kv_port, the argv both sides share, the prefill's DP arguments): the prefill is DP rank 1 of 2
    (TP 1), so it listens on kv_port + 1: the engine id and ports of a rank that is not the first."""
    common = ["serve", str(checkpoint), "--served-model-name", model, "--max-model-len", "4096"]
    dp = ["--data-parallel-size", "2", "--data-parallel-rank", "1", "--data-parallel-address", host]
    dp += ["--data-parallel-rpc-port", str(free_port()), "--enable-expert-parallel"]
    return free_port() - 1, common, dp


def start(sandbox: Sandbox, host: str, args: list[str], mask: str = "0", **env: str) -> HostProc:
    """``vllm serve`` on ``host`` (as Sandbox.start does on 127.0.0.1); VLLM_HOST_IP = host."""
    port = free_port()
    n = len(sandbox.procs)
    out, err = sandbox.root / f"proc{n}.out", sandbox.root / f"proc{n}.err"
    argv = [sys.executable, "-I", str(sandbox.home / "vllm"), *args, "--host", host, "--port", str(port)]
    with out.open("wb") as o, err.open("wb") as e:
        popen = subprocess.Popen(
            argv, env=sandbox.env(mask, VLLM_HOST_IP=host, **env), stdout=o, stderr=e, cwd=sandbox.root
        )
    proc = HostProc(popen, out, err, port, host)
    sandbox.procs.append(proc)
    return proc


def call(
    proc: HostProc, path: str, body: dict[str, Any] | None = None, headers: dict[str, str] | None = None
) -> Response:
    host = proc.host
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        f"http://{host}:{proc.port}{path}", data=data, method="POST" if data else "GET"
    )
    req.add_header("content-type", "application/json")
    for key, value in (headers or {}).items():
        req.add_header(key, value)
    try:
        with urllib.request.urlopen(req, timeout=PATIENCE_S) as resp:
            return Response(resp.status, dict(resp.headers.items()), resp.read())
    except urllib.error.HTTPError as err:
        return Response(err.code, dict(err.headers.items()), err.read())


def wait_healthy(proc: HostProc) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        assert proc.alive(), f"exited {proc.popen.returncode}:\n{proc.stdout()}\n{proc.stderr()}"
        try:
            if call(proc, "/health").status == 200:
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError(proc.stdout())


def two_stage(
    prefill: HostProc, decode: HostProc, path: str, request: dict[str, Any]
) -> tuple[Response, Response]:
    """The proxy's round trip: the prefill request, then the original request with the prefill's
    kv_transfer_params to the decode (load_balance_proxy_server_example.py's order; it sends X-Request-Id)."""
    headers = {"X-Request-Id": f"proxy-{time.monotonic_ns()}"}
    first = call(prefill, path, build_prefill_request(request), headers)
    assert first.status == 200, first.body
    params = first.json().get("kv_transfer_params", {})
    second = dict(request, kv_transfer_params=params) if params else dict(request)
    return first, call(decode, path, second, headers)


def sse_text(body: bytes) -> tuple[str, list[Any]]:
    """A stream's concatenated text (completion or chat deltas) and its events."""
    events = [line[6:] for line in body.decode().splitlines() if line.startswith("data: ")]
    text = ""
    for event in events:
        if event == "[DONE]":
            continue
        for choice in json.loads(event).get("choices", []):
            text += choice.get("text") or (choice.get("delta") or {}).get("content") or ""
    return text, events


def metric(text: str, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels``."""
    total = 0.0
    for m in re.finditer(rf"^{re.escape(name)}\{{([^}}]*)\}} (\S+)$", text, re.M):
        have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        if all(have.get(k) == v for k, v in labels.items()):
            total += float(m.group(2))
    return total


def wait_for(proc: Proc, text: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while text not in proc.stdout() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert text in proc.stdout(), proc.stdout()
    return proc.stdout()


def _connector_tree() -> ast.Module:
    return ast.parse(CONNECTOR.read_text(encoding="utf-8"))


def log_format(fragment: str) -> str:
    """The %-format string of the upstream connector's logger call that contains ``fragment``."""
    for node in ast.walk(_connector_tree()):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "logger"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and fragment in node.args[0].value
        ):
            return node.args[0].value
    raise AssertionError(f"no logger call with {fragment!r} in {CONNECTOR}")


def fstring(fragment: str, **names: Any) -> str:
    """An upstream f-string (an exception or assertion message) containing ``fragment``, evaluated with
    ``names`` (``self`` attributes as a namespace)."""
    for node in ast.walk(_connector_tree()):
        if isinstance(node, ast.JoinedStr):
            literal = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
            if fragment in literal:
                code = compile(ast.Expression(body=node), str(CONNECTOR), "eval")
                return str(eval(code, {}, names))
    raise AssertionError(f"no f-string with {fragment!r} in {CONNECTOR}")


def request_finished_keys() -> set[str]:
    """The keys of the dict ``MooncakeConnectorScheduler.request_finished`` returns."""
    for node in ast.walk(_connector_tree()):
        if isinstance(node, ast.ClassDef) and node.name == "MooncakeConnectorScheduler":
            method = next(
                n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "request_finished"
            )
            for ret in ast.walk(method):
                if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple):
                    call = ret.value.elts[1]
                    if (
                        isinstance(call, ast.Call)
                        and isinstance(call.func, ast.Name)
                        and call.func.id == "dict"
                    ):
                        return {k.arg for k in call.keywords if k.arg}
    raise AssertionError("MooncakeConnectorScheduler.request_finished not found")
