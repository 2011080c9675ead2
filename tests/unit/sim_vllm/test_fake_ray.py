"""The fake `ray` CLI and `vllm serve --distributed-executor-backend ray` of the fake vLLM image.

Each node is a sandbox (its own /dev/davinci0..3, NPU process table and $RAY_TMPDIR), all on 127.0.0.1.
Expected messages and counts are Ray's and vLLM's (ray/_private/accelerators/npu.py and
resource_and_label_spec.py: NPU count = min(detected, len(ASCEND_RT_VISIBLE_DEVICES)) unless --resources
names it, refused above the mask; vllm/v1/executor/ray_utils.py: bundles, PACK, the placement-group timeout
message; Ray's cluster FAQ: "Unable to connect to GCS at ...").
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import PATIENCE_S

from .conftest import Proc, Sandbox, free_port, http


@dataclass
class Node:
    box: Sandbox
    tmp: Path
    mask: str

    def env(self, **extra: str) -> dict[str, str]:
        return self.box.env(
            self.mask,
            RAY_TMPDIR=str(self.tmp),
            # a node is lost when its connection ends (what the tests do) or after 5 silent heartbeats: on a
            # shared machine (CI runs the unit tests at nice 19 beside the integration tests) a short beat
            # loses a node that only waited for a CPU, so silence takes minutes here
            FAKE_RAY_HEARTBEAT_S="60",
            FAKE_RAY_GCS_RECONNECT_S="1",
            **extra,
        )

    def ray(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-I", str(self.box.home / "ray"), *args]
        return subprocess.run(
            argv, env=self.env(**extra), capture_output=True, text=True, timeout=PATIENCE_S, check=False
        )

    def ray_block(self, *args: str, **extra: str) -> subprocess.Popen[str]:
        argv = [sys.executable, "-I", str(self.box.home / "ray"), *args, "--block"]
        return subprocess.Popen(
            argv, env=self.env(**extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def serve(self, args: list[str], **extra: str) -> Proc:
        return self.box.start(args, mask=self.mask, RAY_TMPDIR=str(self.tmp), **extra)

    def processes(self) -> dict[str, Any]:
        return self.box.process_table()

    def kill_leftovers(self) -> None:
        info = self.tmp / "ray" / "fake-ray" / "node.json"
        if info.is_file():
            pid = json.loads(info.read_text())["pid"]
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def nodes(tmp_path: Path, fake_vllm_home: Path) -> Iterator[tuple[Node, Node, int]]:
    """(head, worker, GCS port): two sandboxes with 4 NPUs each, nothing started."""
    made = []
    for name in ("head", "worker"):
        root = tmp_path / name
        root.mkdir()
        made.append(Node(Sandbox(root, fake_vllm_home), root / "tmp", "0,1,2,3"))
    head, worker = made
    yield head, worker, free_port()
    for node in (worker, head):
        node.box.cleanup()
        node.ray("stop")
        node.kill_leftovers()


def _start_head(head: Node, port: int, *extra: str) -> None:
    res = head.ray("start", "--head", "--port", str(port), "--node-ip-address", "127.0.0.1", *extra)
    assert res.returncode == 0, res.stderr
    assert "Ray runtime started." in res.stdout and f"ray start --address='127.0.0.1:{port}'" in res.stdout


def _join(worker: Node, port: int, *extra: str, **env: str) -> subprocess.CompletedProcess[str]:
    return worker.ray(
        "start", "--address", f"127.0.0.1:{port}", "--node-ip-address", "127.0.0.1", *extra, **env
    )


def _serve_args(model: Path, tp: int, pp: int = 1) -> list[str]:
    args = ["serve", str(model), "--tensor-parallel-size", str(tp), "--distributed-executor-backend", "ray"]
    return [*args, "--pipeline-parallel-size", str(pp), "--served-model-name", "m"]


def _pg_error(world: int, ip: str, timeout: str) -> str:
    specs = [{"NPU": 1.0, f"node:{ip}": 0.001}] + [{"NPU": 1.0}] * (world - 1)
    return (
        f"ValueError: Cannot provide a placement group of placement_group_specs={specs} within {timeout} "
        "seconds. See `ray status` and `ray list nodes` to make sure the cluster has enough resources."
    )


def _workers(table: dict[str, Any]) -> list[str]:
    return sorted(
        dev for dev, rows in table.items() if any(r["name"] == "ray::RayWorkerWrapper" for r in rows)
    )


def test_nodes_register_their_npus_as_ray_counts_them(nodes: tuple[Node, Node, int]) -> None:
    head, worker, port = nodes
    _start_head(head, port, "--resources", '{"NPU": 4}')
    worker.mask = "0,1"  # no --resources: min(4 devices, 2 in the mask)
    assert _join(worker, port).returncode == 0
    status = head.ray("status")
    assert status.returncode == 0, status.stderr
    assert status.stdout.count(" 1 node_") == 2
    assert " 0.0/6.0 NPU" in status.stdout and "(no resource demands)" in status.stdout
    assert worker.ray("status").stdout.count(" 1 node_") == 2  # the worker found the GCS it joined
    assert "Stopped all" in worker.ray("stop").stdout
    assert "Did not find any active Ray processes." in worker.ray("stop").stdout
    deadline = time.monotonic() + PATIENCE_S
    while " 0.0/4.0 NPU" not in head.ray("status").stdout and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "Recent failures:\n node_" in head.ray("status").stdout


def test_an_npu_count_above_the_mask_is_refused(nodes: tuple[Node, Node, int]) -> None:
    head, _, port = nodes
    res = head.ray("start", "--head", "--port", str(port), "--resources", '{"NPU": 8}')
    assert res.returncode == 1
    assert (
        "ValueError: Attempting to start raylet with 8 NPU, but ASCEND_RT_VISIBLE_DEVICES contains "
        "['0', '1', '2', '3']." in res.stderr
    )


def test_a_worker_without_a_head_and_a_status_without_a_cluster_fail_like_ray(
    nodes: tuple[Node, Node, int],
) -> None:
    _, worker, port = nodes
    res = _join(worker, port, FAKE_RAY_CONNECT_TIMEOUT_S="0.5")
    assert res.returncode == 1
    assert (
        f"ConnectionError: Unable to connect to GCS at 127.0.0.1:{port}. Check that (1) Ray GCS" in res.stderr
    )
    res = worker.ray("status")
    assert res.returncode == 1 and "Could not find any running Ray instance" in res.stderr
    res = worker.ray("start", "--head", "--bogus")
    assert res.returncode == 2 and "Error: No such option: --bogus" in res.stderr


def test_tp8_serves_over_two_4_npu_nodes_and_dies_with_a_worker_node(
    nodes: tuple[Node, Node, int], checkpoints: dict[str, Path]
) -> None:
    head, worker, port = nodes
    _start_head(head, port, "--resources", '{"NPU": 4}')
    assert _join(worker, port, "--resources", '{"NPU": 4}').returncode == 0
    server = head.serve(_serve_args(checkpoints["a"], 8))  # the head's mask has 4 NPUs: Ray counts 8
    server.wait_healthy()
    assert server.port is not None
    done = http(server.port, "/v1/completions", {"model": "m", "prompt": "hi", "max_tokens": 4})
    assert done.status == 200 and done.json()["choices"][0]["text"]
    assert "8.0/8.0 NPU" in head.ray("status").stdout
    assert _workers(head.processes()) == ["0", "1", "2", "3"] == _workers(worker.processes())
    assert "tensor_parallel_size=8 is bigger than a reserved number of NPUs (4 NPUs)" in server.stdout()

    assert worker.ray("stop").returncode == 0  # a worker node goes: its actors die, and the engine
    assert server.wait() == 1
    assert "ActorDiedError: The actor died unexpectedly" in server.stdout()
    assert "EngineDeadError" in server.stderr()
    assert _workers(worker.processes()) == [] == _workers(head.processes())


def test_the_placement_group_waits_for_workers_then_times_out(
    nodes: tuple[Node, Node, int], checkpoints: dict[str, Path]
) -> None:
    head, worker, port = nodes
    _start_head(head, port, "--resources", '{"NPU": 4}')
    alone = head.serve(_serve_args(checkpoints["a"], 4, 2), FAKE_VLLM_RAY_PG_TIMEOUT_S="2")
    assert alone.wait() == 1
    assert _pg_error(8, "127.0.0.1", "2") in alone.stderr()
    assert "The number of required NPUs exceeds the total number of available NPUs" in alone.stdout()

    late = head.serve(_serve_args(checkpoints["a"], 4, 2), FAKE_VLLM_RAY_PG_TIMEOUT_S=str(PATIENCE_S))
    deadline = time.monotonic() + PATIENCE_S  # until it asked for its placement group (a busy machine)
    while "1+ pending placement groups" not in head.ray("status").stdout and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)
    assert late.alive() and late.health() is None  # still waiting for NPUs: no API yet
    assert "1+ pending placement groups" in head.ray("status").stdout
    assert _join(worker, port, "--resources", '{"NPU": 4}').returncode == 0
    late.wait_healthy()


def test_vllm_host_ip_must_be_a_ray_node_ip(
    nodes: tuple[Node, Node, int], checkpoints: dict[str, Path]
) -> None:
    head, _, port = nodes
    _start_head(head, port)
    proc = head.serve(
        _serve_args(checkpoints["a"], 2), VLLM_HOST_IP="127.0.0.9", FAKE_VLLM_RAY_PG_TIMEOUT_S="1"
    )
    assert proc.wait() == 1
    assert _pg_error(2, "127.0.0.9", "1") in proc.stderr()


def test_without_a_cluster_vllm_starts_a_local_ray_with_its_own_npus(
    nodes: tuple[Node, Node, int], checkpoints: dict[str, Path]
) -> None:
    head, _, _ = nodes
    fits = head.serve(_serve_args(checkpoints["a"], 4))
    fits.wait_healthy()
    assert "Started a local Ray instance." in fits.stdout()
    fits.terminate()
    too_big = head.serve(_serve_args(checkpoints["a"], 8), FAKE_VLLM_RAY_PG_TIMEOUT_S="1")
    assert too_big.wait() == 1
    assert "Cannot provide a placement group" in too_big.stderr()


def test_a_worker_mask_naming_missing_npus_fails_the_worker_actors(
    nodes: tuple[Node, Node, int], checkpoints: dict[str, Path]
) -> None:
    head, worker, port = nodes
    _start_head(head, port)
    worker.mask = "4,5,6,7"  # the worker sandbox has davinci0..3 only
    assert _join(worker, port, "--resources", '{"NPU": 4}').returncode == 0
    proc = head.serve(_serve_args(checkpoints["a"], 8))
    assert proc.wait() == 1
    assert "names NPU(s) [4, 5, 6, 7] the node was not given" in proc.stderr()
    assert "aclrtSetDevice failed, error code is 107001" in proc.stderr()


def test_block_keeps_the_node_in_the_foreground(nodes: tuple[Node, Node, int]) -> None:
    head, worker, port = nodes
    head_proc = head.ray_block("start", "--head", "--port", str(port), "--node-ip-address", "127.0.0.1")
    deadline = time.monotonic() + PATIENCE_S
    while head.ray("status").returncode != 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    worker_proc = worker.ray_block("start", "--address", f"127.0.0.1:{port}")
    while head.ray("status").stdout.count(" 1 node_") < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert head.ray("status").stdout.count(" 1 node_") == 2
    head_proc.send_signal(signal.SIGTERM)  # a clean stop
    out, _ = head_proc.communicate(timeout=PATIENCE_S)
    assert head_proc.returncode == 0 and "This command will now block forever" in out
    out, _ = worker_proc.communicate(timeout=PATIENCE_S)  # its GCS is gone for FAKE_RAY_GCS_RECONNECT_S=1
    assert worker_proc.returncode == 1
    assert "Failed to connect to GCS within 1 seconds" in out
    assert "Some Ray subprocesses exited unexpectedly:" in out
