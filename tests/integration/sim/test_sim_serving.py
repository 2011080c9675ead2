"""The simulator's pieces together, the way the serving phase will use them: install the fake driver on a
simulated server over SSH, build the fake vLLM image inside the server's own Docker engine FROM the plan's
CANN base image, and run the rendered `vllm serve` instance (its argv and env from host_vars) with the
server's NPU devices; the API answers on the server's 127.0.0.N and npu-smi sees the serving processes."""

from __future__ import annotations

import io
import json
import re
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.sim.fake_vllm_image import prepare_build_context
from tests.integration.sim.sim_helpers import Sim, engine, module_cluster

pytestmark = pytest.mark.integration

IMAGE = "fake-vllm:it"
DRIVER_MOUNTS = ("/usr/local/Ascend/driver/lib64", "/usr/local/Ascend/driver/version.info", "/usr/local/dcmi")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from module_cluster(tmp_path_factory, "sv", "--nodes", "1")


def _container(sim: Sim) -> Any:
    return engine().containers.get(sim.container("a2-01"))


def _sh(sim: Sim, script: str) -> tuple[int, str]:
    res = _container(sim).exec_run(["sh", "-c", script])
    return int(res.exit_code), str(res.output.decode())


def _put_dir(sim: Sim, src: Path, dest_parent: str) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(src, arcname=src.name)
    _sh(sim, f"mkdir -p {dest_parent}")
    assert _container(sim).put_archive(dest_parent, buf.getvalue())


def _install_driver(sim: Sim) -> None:
    pkg = next((sim.state_dir / "packages").glob("*npu-driver_*.run"))
    sim.ansible("a2-01", "-m", "ansible.builtin.copy", "-a", f"src={pkg} dest=/root/{pkg.name} mode=0755")
    user = "groupadd HwHiAiUser && useradd -g HwHiAiUser -d /home/HwHiAiUser -m HwHiAiUser -s /bin/bash"
    sim.ansible("a2-01", "-m", "ansible.builtin.shell", "-a", user)
    sim.ansible(
        "a2-01", "-m", "ansible.builtin.command", "-a", f"/root/{pkg.name} --full --install-for-all --quiet"
    )


def _docker_run(instance: dict[str, Any], devices: int, name: str, env: dict[str, str]) -> str:
    argv = ["docker", "run", "-d", "--name", name, "--network", "host"]
    argv += [f"--device=/dev/davinci{i}" for i in range(devices)]
    argv += ["--device=/dev/davinci_manager", "--device=/dev/devmm_svm", "--device=/dev/hisi_hdc"]
    argv += [f"-v={p}:{p}" for p in DRIVER_MOUNTS]
    argv += ["-v=/data/models:/data/models"]
    argv += [f"-e={k}={v}" for k, v in env.items()]
    argv += [IMAGE, "vllm", *instance["args"]]
    return " ".join(f"'{a}'" for a in argv)


def _get(url: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any] | str]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            text = resp.read().decode()
            return resp.status, json.loads(text) if text.startswith("{") else text
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:  # not listening yet
        return 0, str(exc)


def test_rendered_instance_serves_from_the_fake_vllm_image(server: Sim, tmp_path: Path) -> None:
    _install_driver(server)
    inv = server.root / "inventories" / server.name
    group = yaml.safe_load((inv / "group_vars" / "all.yml").read_text())
    build = group["vllm_image_builds"][0]
    host = yaml.safe_load((inv / "host_vars" / "a2-01.yml").read_text())
    (instance,) = host["vllm_serve_instances"]

    ctx = prepare_build_context(tmp_path / "fake-vllm", group["orchestrator_stack"]["vllm"])
    _put_dir(server, ctx, "/root")
    rc, out = _sh(
        server,
        f"docker build --network host --build-arg BASE_IMAGE={build['base_image']} "
        f"-t {IMAGE} /root/fake-vllm",
    )
    assert rc == 0, out
    # /data is a tmpfs in the server, which `docker cp` cannot write into: stage, then copy inside
    _put_dir(server, server.state_dir / "model" / "sim-deepseek-tiny", "/root/models")
    assert _sh(server, "mkdir -p /data/models && cp -r /root/models/sim-deepseek-tiny /data/models/")[0] == 0

    # a mask naming NPUs the container was not given is refused, like the real runtime would fail
    env = {k: str(v) for k, v in instance["env"].items()}
    rc, out = _sh(server, _docker_run(instance, 4, "vllm-badmask", env) + " && docker wait vllm-badmask")
    assert rc == 0 and out.strip().splitlines()[-1] != "0", out
    assert "ASCEND_RT_VISIBLE_DEVICES" in _sh(server, "docker logs vllm-badmask 2>&1")[1]

    rc, out = _sh(server, _docker_run(instance, host["npu_device_count"], "vllm-it", env))
    assert rc == 0, out
    base = f"http://{host['ansible_host']}:{instance['port']}"
    deadline = time.monotonic() + 180
    status: int = 0
    while time.monotonic() < deadline:
        status, _ = _get(f"{base}/health")
        if status == 200:
            break
        time.sleep(1)
    assert status == 200, _sh(server, "docker logs vllm-it 2>&1")[1]

    code, models = _get(f"{base}/v1/models")
    assert code == 200 and isinstance(models, dict)
    assert models["data"][0]["id"] == "sim-deepseek"
    code, done = _get(f"{base}/v1/completions", {"model": "sim-deepseek", "prompt": "hello", "max_tokens": 8})
    assert code == 200 and isinstance(done, dict) and done["choices"][0]["text"]
    table = _sh(server, "npu-smi info")[1]
    assert re.search(r"\| 0\s+0\s+\| \d+\s+\| VLLM", table), table

    _sh(server, "docker stop -t 5 vllm-it")
    assert "No running processes found in NPU 0" in _sh(server, "npu-smi info")[1]
