"""Multi-node data parallelism: the head is not healthy until headless ranks with the same weights join."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from ascend_sim.checkpoint import generate_checkpoint
from tests.helpers import PATIENCE_S

from .conftest import Proc, Sandbox, free_port, http

ROOT = Path(__file__).resolve().parents[3]


def _dp_args(model: Path, rpc: int, *extra: str) -> list[str]:
    return [
        "serve",
        str(model),
        "--data-parallel-size",
        "2",
        "--data-parallel-size-local",
        "1",
        "--data-parallel-address",
        "127.0.0.1",
        "--data-parallel-rpc-port",
        str(rpc),
        *extra,
    ]


def _headless(sandbox: Sandbox, model: Path, rpc: int, start_rank: int) -> Proc:
    args = _dp_args(model, rpc, "--headless", "--data-parallel-start-rank", str(start_rank))
    return sandbox.start(args, mask="1")


def _wait_health(proc: Proc, status: int, timeout: float = PATIENCE_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.health() == status:
            return
        time.sleep(0.05)
    raise AssertionError(f"/health never became {status}:\n{proc.stdout()}")


def _wait_output(proc: Proc, text: str, timeout: float = PATIENCE_S) -> None:
    """Until `text` is in proc's stdout: a headless logs that it joined after the head counted it (the head
    may turn healthy first, and on a busy machine the headless may log much later)."""
    deadline = time.monotonic() + timeout
    while text not in proc.stdout() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert text in proc.stdout(), proc.stdout()


def test_head_waits_for_headless_ranks(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    rpc = free_port()
    head = sandbox.start(_dp_args(checkpoints["a"], rpc, "--served-model-name", "m"), mask="0")
    head.wait_port()
    assert head.port is not None
    for _ in range(5):
        assert head.health() == 503
        time.sleep(0.05)
    assert http(head.port, "/v1/completions", {"model": "m", "prompt": "hi"}).status == 503
    assert "Waiting for 1 local, 1 remote core engine proc(s) to start" in head.stdout()

    wrong = _headless(sandbox, checkpoints["b"], rpc, 1)
    assert wrong.wait() == 1
    assert "RuntimeError: Data parallel head rejected DP ranks [1]: model weights differ" in wrong.stderr()
    taken = _headless(sandbox, checkpoints["a"], rpc, 0)
    assert taken.wait() == 1
    assert "DP ranks [0] are already served" in taken.stderr()
    assert head.health() == 503

    worker = _headless(sandbox, checkpoints["a"], rpc, 1)
    head.wait_healthy()
    _wait_output(worker, "joined")
    assert "Launching 1 data parallel engine(s) in headless mode" in worker.stdout()
    assert http(head.port, "/v1/completions", {"model": "m", "prompt": "hi"}).status == 200
    metrics = http(head.port, "/metrics").body.decode()
    assert 'vllm:num_requests_running{engine="1",model_name="m"}' in metrics

    assert worker.terminate() == 0  # a rank leaves: the head is unhealthy until it is back
    _wait_health(head, 503)
    worker = _headless(sandbox, checkpoints["a"], rpc, 1)
    head.wait_healthy()

    assert head.terminate() == 0  # the head goes away for good: the headless gives up
    assert worker.wait() == 1
    assert "lost the data parallel head at 127.0.0.1" in worker.stderr()
    assert sandbox.process_table() == {}


def test_headless_gives_up_when_no_head(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    args = _dp_args(checkpoints["a"], free_port(), "--headless", "--data-parallel-start-rank", "1")
    proc = sandbox.start(args, mask="1", FAKE_VLLM_DP_CONNECT_TIMEOUT_S="0.5")
    assert proc.wait() == 1
    assert "could not reach the data parallel head" in proc.stderr()


def _rendered(host: str) -> dict[str, Any]:
    path = ROOT / "inventories" / "a2-pair-r1-w8a8" / "host_vars" / f"{host}.yml"
    (instance,) = YAML(typ="safe").load(path.read_text(encoding="utf-8"))["vllm_serve_instances"]
    return dict(instance)


def _localize(args: list[str], model: Path, rpc: int) -> list[str]:
    """The rendered argv with the weights at ``model`` and the DP handshake on 127.0.0.1:``rpc``."""
    out = list(args)
    out[1] = str(model)
    for flag, value in (("--data-parallel-address", "127.0.0.1"), ("--data-parallel-rpc-port", str(rpc))):
        out[out.index(flag) + 1] = value
    return out


def test_rendered_two_node_replica_comes_up(sandbox: Sandbox, tmp_path: Path) -> None:
    """The renderer's a2-pair instances (W8A8, DP4 x TP4 over two 8-NPU servers) as the fake runs them."""
    for n in range(4, 8):
        (sandbox.dev / f"davinci{n}").touch()
    model = generate_checkpoint(tmp_path / "r1", total_bytes=1 << 20, shards=2, arch="DeepSeek-R1-W8A8")
    rpc = free_port()
    head_i, node_i = _rendered("a2-01"), _rendered("a2-02")
    assert (head_i["role"], node_i["role"]) == ("head", "headless")
    head_env, node_env = dict(head_i["env"]), dict(node_i["env"])
    head = sandbox.start(
        _localize(head_i["args"], model, rpc), mask=head_env.pop("ASCEND_RT_VISIBLE_DEVICES"), **head_env
    )
    node = sandbox.start(
        _localize(node_i["args"], model, rpc), mask=node_env.pop("ASCEND_RT_VISIBLE_DEVICES"), **node_env
    )
    head.wait_healthy()
    assert head.port is not None
    served = head_i["args"][head_i["args"].index("--served-model-name") + 1]
    resp = http(
        head.port, "/v1/chat/completions", {"model": served, "messages": [{"role": "user", "content": "hi"}]}
    )
    assert resp.status == 200, resp.body
    assert sorted(sandbox.process_table()) == [str(n) for n in range(8)]
    _wait_output(node, "DP ranks [2, 3] joined")
    assert node.terminate() == 0 and head.terminate() == 0
