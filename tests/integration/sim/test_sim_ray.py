"""A Ray replica end to end on two simulated Atlas 800T A2 servers: the spec of `sim up` with one replica of
tp 16 over both servers (multi_node_tp: true), rendered by `orchestrator render`; each server runs the
rendered instance from the fake vLLM image built inside it: the worker `ray start --address ... --block`, the
head `ray start --head ...` then its `vllm serve ... --distributed-executor-backend ray`, all from host_vars
(argv, env, NPU mask), as vllm-ascend's Ray tutorial runs them. The API answers once Ray holds 16 NPUs on two
nodes; without the worker the head fails with vLLM's placement-group timeout; losing the worker ends it."""

from __future__ import annotations

import shlex
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.sim import serving_helpers as sv
from tests.integration.sim.sim_helpers import Sim, module_cluster

pytestmark = pytest.mark.integration

IMAGE = "fake-vllm:ray-it"
HEAD, WORKER = "a2-01", "a2-02"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from module_cluster(tmp_path_factory, "ry", "--nodes", "2")


@pytest.fixture(scope="module")
def ray_inventory(cluster: Sim, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cluster spec with one Ray replica, rendered by the CLI; driver, image, weights on both servers."""
    site = yaml.safe_load((cluster.root / "inventories" / cluster.name / "site.yaml").read_text())
    site["site"] = f"{cluster.name}-ray"
    site["serving"]["parallelism"] = {"tp": 16}
    site["serving"]["replicas"] = [{"name": "ray16", "servers": [HEAD, WORKER], "multi_node_tp": True}]
    folder = cluster.root / "inventories" / f"{cluster.name}-ray"
    folder.mkdir()
    (folder / "site.yaml").write_text(yaml.safe_dump(site, sort_keys=False))
    cluster.cli("render", str(folder / "site.yaml"))

    inventory = cluster.root / "inventories" / cluster.name
    sv.install_driver(cluster, f"{HEAD}:{WORKER}")
    base = yaml.safe_load((inventory / "group_vars" / "all.yml").read_text())["vllm_image_builds"][0][
        "base_image"
    ]
    sv.build_image(cluster, HEAD, base, IMAGE, tmp_path_factory.mktemp("ray-image"))  # the build host
    sv.copy_image(cluster, HEAD, WORKER, IMAGE)
    for server in (HEAD, WORKER):
        sv.stage_model(cluster, server)
    return folder


def _instance(inventory: Path, server: str) -> tuple[dict[str, Any], dict[str, Any]]:
    hv = sv.host_vars(inventory, server)
    (instance,) = hv["vllm_serve_instances"]
    return hv, instance


def _start(cluster: Sim, inventory: Path, server: str, **extra_env: str) -> dict[str, Any]:
    """Run the server's rendered Ray instance: the worker's `ray start`, the head's `ray start` + `vllm`."""
    hv, inst = _instance(inventory, server)
    ray = ["ray", *inst["ray"]["start_args"]]
    command = (
        ray
        if not inst["args"]
        else ["sh", "-c", f"{shlex.join(ray)} && exec {shlex.join(['vllm', *inst['args']])}"]
    )
    rc, out = sv.sh(cluster, server, sv.docker_run(inst, hv["npu_device_count"], IMAGE, command, extra_env))
    assert rc == 0, out
    return inst


def _logs(cluster: Sim, server: str, name: str) -> str:
    return sv.sh(cluster, server, f"docker logs {name} 2>&1")[1]


def _wait_exit(cluster: Sim, server: str, name: str, timeout_s: int) -> str:
    rc, out = sv.sh(cluster, server, f"timeout {timeout_s} docker wait {name}")
    assert rc == 0, f"{name} still running after {timeout_s} s:\n{_logs(cluster, server, name)}"
    return out.strip()


def _npu_processes(cluster: Sim, server: str, timeout_s: float = 30) -> str:
    """`npu-smi info` on ``server`` once it lists a Ray worker actor: the head's GCS pushes the placement
    group's bundles to the worker's raylet asynchronously, so on a busy machine the table may lag the
    first answer by a few seconds."""
    deadline = time.monotonic() + timeout_s
    while True:
        out = sv.sh(cluster, server, "npu-smi info")[1]
        if "ray::RayWorke" in out or time.monotonic() > deadline:
            return out
        time.sleep(1)


def _clean(cluster: Sim, name: str) -> None:
    for server in (HEAD, WORKER):
        sv.sh(cluster, server, f"docker rm -f {name}")


def test_rendered_ray_replica_serves_over_two_servers(cluster: Sim, ray_inventory: Path) -> None:
    head_hv, head = _instance(ray_inventory, HEAD)
    _, worker = _instance(ray_inventory, WORKER)
    assert (head["role"], worker["role"], worker["args"]) == ("head", "ray-worker", [])
    assert head["args"][head["args"].index("--tensor-parallel-size") + 1] == "16"
    assert (
        head["env"]["ASCEND_RT_VISIBLE_DEVICES"]
        == "0,1,2,3,4,5,6,7"
        == worker["env"]["ASCEND_RT_VISIBLE_DEVICES"]
    )
    name = head["container_name"]
    try:
        _start(cluster, ray_inventory, HEAD)
        _start(cluster, ray_inventory, WORKER)
        base = f"http://{head_hv['ansible_host']}:{head['port']}"
        assert sv.wait_health(base, 180) == 200, _logs(cluster, HEAD, name) + _logs(cluster, WORKER, name)

        code, done = sv.http(
            f"{base}/v1/completions", {"model": "sim-deepseek", "prompt": "hello", "max_tokens": 8}
        )
        assert code == 200 and done["choices"][0]["text"]
        status = sv.sh(cluster, HEAD, f"docker exec {name} ray status")[1]
        assert status.count(" 1 node_") == 2 and " 16.0/16.0 NPU" in status, status
        table = _npu_processes(cluster, WORKER)
        assert "ray::RayWorke" in table, table + _logs(cluster, WORKER, name)  # worker actors hold its NPUs

        sv.sh(cluster, WORKER, f"docker stop -t 5 {name}")  # the worker node goes: the engine dies with it
        assert _wait_exit(cluster, HEAD, name, 60) == "1"
        assert "ActorDiedError" in _logs(cluster, HEAD, name)
    finally:
        _clean(cluster, name)


def test_head_without_its_worker_fails_with_the_placement_group_timeout(
    cluster: Sim, ray_inventory: Path
) -> None:
    head = _start(cluster, ray_inventory, HEAD, FAKE_VLLM_RAY_PG_TIMEOUT_S="15")
    name = head["container_name"]
    try:
        assert _wait_exit(cluster, HEAD, name, 120) == "1"
        logs = _logs(cluster, HEAD, name)
        ip = head["ray"]["node_ip_address"]
        bundles = [{"NPU": 1.0, f"node:{ip}": 0.001}] + [{"NPU": 1.0}] * 15
        assert (
            f"ValueError: Cannot provide a placement group of placement_group_specs={bundles} within 15"
            in logs
        )
        assert "The number of required NPUs exceeds the total number of available NPUs" in logs
    finally:
        _clean(cluster, name)
