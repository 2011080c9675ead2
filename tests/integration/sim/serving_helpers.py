"""Serving on simulated servers, any server of a cluster: install the fake driver over SSH, build the fake
vLLM image in the server's own Docker engine, stage the tiny checkpoint, and turn a rendered
`vllm_serve_instances` entry into the vllm-ascend `docker run` (devices, driver mounts, env)."""

from __future__ import annotations

import io
import json
import shlex
import subprocess
import tarfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from ascend_sim.fake_vllm_image import prepare_build_context
from ascend_sim.spec_writer import MODEL_NAME
from tests.integration.sim.sim_helpers import Sim, engine

DRIVER_MOUNTS = ("/usr/local/Ascend/driver/lib64", "/usr/local/Ascend/driver/version.info", "/usr/local/dcmi")


def sh(sim: Sim, server: str, script: str) -> tuple[int, str]:
    res = engine().containers.get(sim.container(server)).exec_run(["sh", "-c", script])
    return int(res.exit_code), str(res.output.decode())


def put_dir(sim: Sim, server: str, src: Path, dest_parent: str) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(src, arcname=src.name)
    sh(sim, server, f"mkdir -p {dest_parent}")
    if not engine().containers.get(sim.container(server)).put_archive(dest_parent, buf.getvalue()):
        raise RuntimeError(f"cannot copy {src} into {server}:{dest_parent}")


def install_driver(sim: Sim, hosts: str) -> None:
    """The fake driver .run on ``hosts`` (an Ansible pattern), as the host layer installs it."""
    pkg = next((sim.state_dir / "packages").glob("*npu-driver_*.run"))
    sim.ansible(hosts, "-m", "ansible.builtin.copy", "-a", f"src={pkg} dest=/root/{pkg.name} mode=0755")
    user = "groupadd HwHiAiUser && useradd -g HwHiAiUser -d /home/HwHiAiUser -m HwHiAiUser -s /bin/bash"
    sim.ansible(hosts, "-m", "ansible.builtin.shell", "-a", user)
    sim.ansible(
        hosts, "-m", "ansible.builtin.command", "-a", f"/root/{pkg.name} --full --install-for-all --quiet"
    )


def build_image(
    sim: Sim, server: str, base_image: str, tag: str, scratch: Path, vllm_version: str | None = None
) -> None:
    """The fake vLLM image (flag table of ``vllm_version``, e.g. the inventory's orchestrator_stack.vllm)."""
    ctx = prepare_build_context(scratch / "fake-vllm", vllm_version)
    put_dir(sim, server, ctx, "/root")
    rc, out = sh(
        sim,
        server,
        f"docker build --network host --build-arg BASE_IMAGE={base_image} -t {tag} /root/fake-vllm",
    )
    if rc != 0:
        raise RuntimeError(f"fake vLLM image build on {server} failed:\n{out}")


def copy_image(sim: Sim, src: str, dest: str, tag: str) -> None:
    """Distribute an image built on the build host to another server (`docker save | docker load`, no
    registry), as a site without a registry ships the serving image."""
    save = f"docker exec {sim.container(src)} docker save {tag}"
    pipe = f"set -o pipefail; {save} | docker exec -i {sim.container(dest)} docker load"
    proc = subprocess.run(["bash", "-c", pipe], capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"copying {tag} from {src} to {dest} failed:\n{proc.stdout}{proc.stderr}")


def stage_model(sim: Sim, server: str) -> None:
    """/data is a tmpfs in the server, which `docker cp` cannot write into: stage, then copy inside."""
    put_dir(sim, server, sim.state_dir / "model" / MODEL_NAME, "/root/models")
    rc, out = sh(sim, server, f"mkdir -p /data/models && cp -r /root/models/{MODEL_NAME} /data/models/")
    if rc != 0:
        raise RuntimeError(out)


def host_vars(inventory: Path, server: str) -> dict[str, Any]:
    data = yaml.safe_load((inventory / "host_vars" / f"{server}.yml").read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise TypeError(f"host_vars/{server}.yml is not a mapping")
    return data


def docker_run(
    instance: dict[str, Any],
    devices: int,
    image: str,
    command: list[str],
    extra_env: dict[str, str] | None = None,
) -> str:
    """The vllm-ascend `docker run -d` of a rendered instance (its env, every NPU of the server), quoted."""
    argv = ["docker", "run", "-d", "--name", instance["container_name"], "--network", "host"]
    argv += [f"--device=/dev/davinci{i}" for i in range(devices)]
    argv += ["--device=/dev/davinci_manager", "--device=/dev/devmm_svm", "--device=/dev/hisi_hdc"]
    argv += [f"-v={p}:{p}" for p in DRIVER_MOUNTS]
    argv += ["-v=/data/models:/data/models"]
    env = {**{k: str(v) for k, v in instance["env"].items()}, **(extra_env or {})}
    argv += [f"-e={k}={v}" for k, v in env.items()]
    return shlex.join([*argv, image, *command])


def http(url: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
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


def wait_health(url: str, timeout_s: float) -> int:
    deadline = time.monotonic() + timeout_s
    status = 0
    while time.monotonic() < deadline:
        status, _ = http(f"{url}/health")
        if status == 200:
            break
        time.sleep(1)
    return status
