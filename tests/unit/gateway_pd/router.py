"""The real vllm-router (PyPI `vllm-router`, the project's pin), started the way the gateway role's image
starts it: roles/gateway/files/vllm-router/vllm-router-entry.py with this interpreter (the dev extra installs
the wheel into the venv)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import PATIENCE_S, ROOT

ENTRY = ROOT / "roles/gateway/files/vllm-router/vllm-router-entry.py"
PINNED = "0.1.17"  # orchestrator/spec/gateway.py DEFAULT_ROUTER_VERSION; pyproject.toml dev extra


def require_router() -> str:
    """The installed router's version; a clear failure (not a skip) when it is missing."""
    try:
        version = metadata.version("vllm-router")
    except metadata.PackageNotFoundError:
        pytest.fail(
            "vllm-router is not installed in this venv: these tests run the real router. Install the dev "
            "extra (pip install -e '.[dev]', which pins vllm-router==" + PINNED + ")",
            pytrace=False,
        )
    return version


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def free_run(host: str, n: int) -> int:
    """A port p with p .. p + n - 1 all free (a PD gateway's front and slot ports)."""
    for _ in range(100):
        base = free_port(host)
        if base + n > 65535:
            continue
        try:
            for port in range(base + 1, base + n):
                with socket.socket() as s:
                    s.bind((host, port))
        except OSError:
            continue
        return base
    raise RuntimeError(f"no {n} consecutive free ports on {host}")


@dataclass
class Http:
    status: int
    body: str
    headers: dict[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        return json.loads(self.body)


def call(url: str, method: str = "GET", body: object = None, headers: dict[str, str] | None = None,
         timeout: float = 10) -> Http:  # fmt: skip
    data = None if body is None else json.dumps(body).encode()
    hdrs = {"content-type": "application/json", **(headers or {})}
    req = urllib.request.Request(url, data=data, method=method, headers=hdrs)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return Http(resp.status, resp.read().decode(), {k.lower(): v for k, v in resp.headers.items()})
    except urllib.error.HTTPError as err:
        return Http(err.code, err.read().decode(), {k.lower(): v for k, v in err.headers.items()})


@dataclass
class Router:
    host: str
    args: list[str]
    port: int = 0
    env: dict[str, str] = field(default_factory=dict)  # added to a copy of os.environ without OPENAI_API_KEY
    proc: subprocess.Popen[bytes] | None = None
    log: Path = field(default_factory=lambda: Path(tempfile.mkstemp(prefix="vllm-router-", suffix=".log")[1]))

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def argv(self) -> list[str]:
        if "--port" in self.args:  # a whole rendered command line (gateway_router_args)
            return [sys.executable, str(ENTRY), *self.args]
        return [
            sys.executable, str(ENTRY),
            "--host", self.host, "--port", str(self.port),
            "--prometheus-host", self.host, "--prometheus-port", str(free_port(self.host)),
            *self.args,
        ]  # fmt: skip

    def start(self) -> Router:
        require_router()
        if "--port" in self.args:
            self.host = self.args[self.args.index("--host") + 1]
            self.port = int(self.args[self.args.index("--port") + 1])
        self.port = self.port or free_port(self.host)
        with self.log.open("wb") as out:
            env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"} | self.env
            self.proc = subprocess.Popen(self.argv(), stdout=out, stderr=subprocess.STDOUT, env=env)
        return self

    def wait(self, path: str = "/liveness", timeout: float = PATIENCE_S, want: int = 200) -> float:
        """Seconds until `path` answers `want`; fails with the router's log when it does not. The bound is the
        test bed's patience: a router started beside the integration tests' clusters once took over 15 s to
        answer /readiness, and a wait ends as soon as the answer comes."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if self.exited() is not None:
                pytest.fail(f"vllm-router exited ({self.exited()}): {self.text()[-3000:]}")
            try:
                if call(self.url + path, timeout=2).status == want:
                    return time.monotonic() - t0
            except OSError:
                pass
            time.sleep(0.05)
        pytest.fail(f"vllm-router {path} did not answer {want} within {timeout} s: {self.text()[-3000:]}")

    def exited(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def wait_exit(self, timeout: float) -> int | None:
        assert self.proc is not None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()  # test_pd_start.py measures SIGTERM; here only the end of a test
            self.proc.wait(5)
        self.log.unlink(missing_ok=True)

    def get(self, path: str, timeout: float = 10) -> Http:
        return call(self.url + path, timeout=timeout)

    def post(self, path: str, body: object = None, headers: dict[str, str] | None = None,
             timeout: float = 10) -> Http:  # fmt: skip
        return call(self.url + path, "POST", body if body is not None else {}, headers, timeout)

    def delete(self, path: str) -> Http:
        return call(self.url + path, "DELETE")


def pd_args(prefill: list[str], decode: list[str], *extra: str) -> list[str]:
    args = ["--vllm-pd-disaggregation"]
    for url in prefill:
        args += ["--prefill", url, "none"]
    for url in decode:
        args += ["--decode", url]
    return [*args, *extra]
