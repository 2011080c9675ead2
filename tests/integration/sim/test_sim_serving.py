"""The simulator's pieces together, the way the serving phase will use them: install the fake driver on a
simulated server over SSH, build the fake vLLM image inside the server's own Docker engine FROM the plan's
CANN base image, and run the rendered `vllm serve` instance (its argv and env from host_vars) with the
server's NPU devices; the API answers on the server's 127.0.0.N and npu-smi sees the serving processes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from orchestrator.pipeline import validate_file
from tests.integration.sim.serving_helpers import (
    build_image,
    docker_run,
    host_vars,
    http,
    install_driver,
    sh,
    stage_model,
    wait_health,
)
from tests.integration.sim.sim_helpers import Sim, module_cluster

pytestmark = pytest.mark.integration

IMAGE = "fake-vllm:it"
SERVER = "a2-01"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from module_cluster(tmp_path_factory, "sv", "--nodes", "1")


def test_rendered_instance_serves_from_the_fake_vllm_image(server: Sim, tmp_path: Path) -> None:
    install_driver(server, SERVER)
    inv = server.root / "inventories" / server.name
    group = yaml.safe_load((inv / "group_vars" / "all.yml").read_text())
    build = group["vllm_image_builds"][0]
    host = host_vars(inv, SERVER)
    (instance,) = host["vllm_serve_instances"]
    plan = validate_file(inv / "site.yaml").plan  # the release's vLLM: the plan's stack
    assert plan is not None
    build_image(server, SERVER, build["base_image"], IMAGE, tmp_path, plan.stack.vllm)
    stage_model(server, SERVER)
    command = ["vllm", *instance["args"]]

    # a mask naming NPUs the container was not given is refused, like the real runtime would fail
    bad = {**instance, "container_name": "vllm-badmask"}
    rc, out = sh(server, SERVER, docker_run(bad, 4, IMAGE, command) + " && docker wait vllm-badmask")
    assert rc == 0 and out.strip().splitlines()[-1] != "0", out
    assert "ASCEND_RT_VISIBLE_DEVICES" in sh(server, SERVER, "docker logs vllm-badmask 2>&1")[1]

    rc, out = sh(server, SERVER, docker_run(instance, host["npu_device_count"], IMAGE, command))
    assert rc == 0, out
    name = instance["container_name"]
    base = f"http://{host['ansible_host']}:{instance['port']}"
    assert wait_health(base, 180) == 200, sh(server, SERVER, f"docker logs {name} 2>&1")[1]

    code, models = http(f"{base}/v1/models")
    assert code == 200 and isinstance(models, dict)
    assert models["data"][0]["id"] == "sim-deepseek"
    code, done = http(f"{base}/v1/completions", {"model": "sim-deepseek", "prompt": "hello", "max_tokens": 8})
    assert code == 200 and isinstance(done, dict) and done["choices"][0]["text"]
    table = sh(server, SERVER, "npu-smi info")[1]
    assert re.search(r"\| 0\s+0\s+\| \d+\s+\| VLLM", table), table

    sh(server, SERVER, f"docker stop -t 5 {name}")
    assert "No running processes found in NPU 0" in sh(server, SERVER, "npu-smi info")[1]
