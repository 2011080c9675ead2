"""Fixtures for the fake vLLM server tests: a build context run as the image runs it, small checkpoints, a
sandbox (device dir, driver mount, state files) and helpers to start servers on free 127.0.0.1 ports."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ascend_sim.checkpoint import generate_checkpoint
from ascend_sim.fake_vllm_image import prepare_build_context
from tests.helpers import PATIENCE_S

CKPT_BYTES = 2 << 20


@pytest.fixture(scope="session")
def fake_vllm_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The image build context: fake_vllm/, flags.json, vllm shim, Dockerfile."""
    return prepare_build_context(tmp_path_factory.mktemp("fake-vllm-context"))


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two checkpoints of the same shape and size whose bytes differ (seed 0 / seed 1)."""
    root = tmp_path_factory.mktemp("checkpoints")
    return {
        "a": generate_checkpoint(root / "a", total_bytes=CKPT_BYTES, seed=0),
        "b": generate_checkpoint(root / "b", total_bytes=CKPT_BYTES, seed=1),
    }


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def http(
    port: int,
    path: str,
    body: dict[str, Any] | None = None,
    *,
    key: str | None = None,
    timeout: float = PATIENCE_S,
) -> Response:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=data, method="POST" if data else "GET"
    )
    if data:
        req.add_header("content-type", "application/json")
    if key:
        req.add_header("authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return Response(resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read())
    except urllib.error.HTTPError as err:
        return Response(err.code, {k.lower(): v for k, v in err.headers.items()}, err.read())


@dataclass
class Proc:
    popen: subprocess.Popen[bytes]
    out: Path
    err: Path
    port: int | None = None

    def stdout(self) -> str:
        return self.out.read_text(encoding="utf-8", errors="replace")

    def stderr(self) -> str:
        return self.err.read_text(encoding="utf-8", errors="replace")

    def wait(self, timeout: float = PATIENCE_S) -> int:
        return self.popen.wait(timeout=timeout)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def health(self) -> int | None:
        """/health status, None while the port is closed."""
        assert self.port is not None
        try:
            return http(self.port, "/health").status
        except OSError:
            return None

    def wait_healthy(self, timeout: float = PATIENCE_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise AssertionError(
                    f"server exited {self.popen.returncode}:\n{self.stdout()}\n{self.stderr()}"
                )
            if self.health() == 200:
                return
            time.sleep(0.05)
        raise AssertionError(f"server not healthy after {timeout}s:\n{self.stdout()}\n{self.stderr()}")

    def wait_port(self, timeout: float = PATIENCE_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.alive():
            if self.health() is not None:
                return
            time.sleep(0.05)
        raise AssertionError(f"port never opened:\n{self.stdout()}\n{self.stderr()}")

    def terminate(self, timeout: float = PATIENCE_S) -> int:
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)
        return self.popen.wait(timeout=timeout)


@dataclass
class Sandbox:
    """A fake container: /dev with davinci0..3 and the management devices, a driver mount, state files."""

    root: Path
    home: Path
    procs: list[Proc] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.dev = self.root / "dev"
        self.dev.mkdir()
        for name in (
            "davinci0",
            "davinci1",
            "davinci2",
            "davinci3",
            "davinci_manager",
            "devmm_svm",
            "hisi_hdc",
        ):
            (self.dev / name).touch()
        self.driver = self.root / "driver"
        (self.driver / "lib64").mkdir(parents=True)
        (self.driver / "version.info").write_text("Version=24.1.0\n")
        self.state = self.root / "ascend-sim"
        self.processes = self.state / "processes.json"
        self.faults = self.state / "vllm-faults.json"

    def env(self, mask: str | None, **extra: str) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "FAKE_VLLM_HOME": str(self.home),
            "FAKE_VLLM_DEV_DIR": str(self.dev),
            "FAKE_VLLM_DRIVER_DIR": str(self.driver),
            "FAKE_VLLM_PROCESSES": str(self.processes),
            "FAKE_VLLM_FAULTS": str(self.faults),
            "FAKE_VLLM_HARDWARE": str(self.state / "hardware.json"),
            "FAKE_VLLM_INIT_S": "0",
            "FAKE_VLLM_COMPILE_S": "0",
            # the compile caches (~/.cache/vllm, ~/.triton/cache: compile_cache.py) of this sandbox only
            "HOME": str(self.root / "home"),
            "FAKE_VLLM_TOKEN_MS": "0",
            "FAKE_VLLM_FAULTS_POLL_S": "0.1",
            # a peer is lost when its connection ends (what the tests do) or after 5 silent heartbeats: on a
            # shared machine (CI runs the unit tests at nice 19 beside the integration tests) a short beat
            # loses a rank that only waited for a CPU, so silence takes minutes here
            "FAKE_VLLM_DP_HEARTBEAT_S": "60",
            "FAKE_VLLM_DP_CONNECT_TIMEOUT_S": str(PATIENCE_S),  # a headless waits for its head to come up
            "FAKE_VLLM_DP_LOST_TIMEOUT_S": "1",
        }
        if mask is not None:
            env["ASCEND_RT_VISIBLE_DEVICES"] = mask
        env.update(extra)
        return env

    def start(self, args: list[str], mask: str | None = "0", *, port: int | None = None, **env: str) -> Proc:
        """Run ``vllm <args>`` through the image's shim (``--host 127.0.0.1 --port N`` added for serve)."""
        n = len(self.procs)
        if args[:1] == ["serve"] and "--headless" not in args:
            port = port or free_port()
            args = [*args, "--host", "127.0.0.1", "--port", str(port)]
        out, err = self.root / f"proc{n}.out", self.root / f"proc{n}.err"
        with out.open("wb") as o, err.open("wb") as e:
            popen = subprocess.Popen(
                [sys.executable, "-I", str(self.home / "vllm"), *args],
                env=self.env(mask, **env),
                stdout=o,
                stderr=e,
                cwd=self.root,
            )
        proc = Proc(popen, out, err, port)
        self.procs.append(proc)
        return proc

    def run(self, args: list[str], mask: str | None = "0", **env: str) -> Proc:
        """Start and wait for exit (start-up failures)."""
        proc = self.start(args, mask, **env)
        proc.wait()
        return proc

    def process_table(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self.processes.read_text())
        except FileNotFoundError:
            return {}
        return data

    def cleanup(self) -> None:
        for proc in self.procs:
            if proc.alive():
                proc.popen.kill()
                proc.popen.wait(timeout=PATIENCE_S)


@pytest.fixture
def sandbox(tmp_path: Path, fake_vllm_home: Path) -> Iterator[Sandbox]:
    box = Sandbox(tmp_path, fake_vllm_home)
    yield box
    box.cleanup()


@pytest.fixture(scope="module")
def module_sandbox(tmp_path_factory: pytest.TempPathFactory, fake_vllm_home: Path) -> Iterator[Sandbox]:
    box = Sandbox(tmp_path_factory.mktemp("sandbox"), fake_vllm_home)
    yield box
    box.cleanup()
