"""Role container_runtime through `orchestrator apply --phases host` on the simulated cluster (an NPU server
and a gateway host, both in the group container_runtime): converge, the running engine uses daemon.json,
a second apply changes nothing, and check mode reports exactly the host whose daemon.json was edited
(without touching it); a normal apply then puts it back.

The simulated server's dockerd is Debian's docker.service under systemd (ascend_sim/payloads/sim-server)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.integration.sim.sim_helpers import Sim, module_cluster

pytestmark = pytest.mark.integration

HOSTS = ["a2-01", "gw-01"]
DAEMON_JSON = "/etc/docker/daemon.json"


@pytest.fixture(scope="module")
def engine_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from module_cluster(tmp_path_factory, "itc", "--nodes", "1", "--gateway", "--no-image-base")


def host_phase(sim: Sim, *args: str) -> tuple[int, dict[str, Any]]:
    proc = sim.cli("apply", sim.name, "--phases", "host", "--yes", "--format", "json", *args, check=False)
    return proc.returncode, json.loads(proc.stdout)


def changed(out: dict[str, Any]) -> dict[str, int]:
    return {h: c["changed"] for h, c in out["phases"][0]["hosts"].items()}


def test_converge_then_nothing_changes(engine_cluster: Sim) -> None:
    rc, out = host_phase(engine_cluster)
    assert rc == 0, out["failures"]
    for host in HOSTS:
        info = engine_cluster.exec(host, "docker info --format '{{.LiveRestoreEnabled}} {{.LoggingDriver}}'")
        assert info.split() == ["true", "json-file"], (host, info)
        config = json.loads(engine_cluster.exec(host, f"cat {DAEMON_JSON}"))
        assert config["log-opts"] == {"max-size": "100m", "max-file": "5"}
    rc, again = host_phase(engine_cluster)
    assert rc == 0 and changed(again) == {"a2-01": 0, "gw-01": 0}


def test_check_mode_names_the_edited_host_only(engine_cluster: Sim) -> None:
    engine_cluster.exec("gw-01", f'sed -i \'s/"max-file": "5"/"max-file": "9"/\' {DAEMON_JSON}')
    before = engine_cluster.exec("gw-01", f"cat {DAEMON_JSON}")
    assert '"max-file": "9"' in before
    rc, out = host_phase(engine_cluster, "--check")
    assert rc == 0, out["failures"]
    assert changed(out)["a2-01"] == 0 and changed(out)["gw-01"] >= 1
    assert engine_cluster.exec("gw-01", f"cat {DAEMON_JSON}") == before  # check mode changed nothing
    rc, fixed = host_phase(engine_cluster)
    assert rc == 0 and changed(fixed)["gw-01"] >= 1
    assert '"max-file": "5"' in engine_cluster.exec("gw-01", f"cat {DAEMON_JSON}")


def test_ascend_docker_runtime_installed_registered_and_default_on_npu_servers(engine_cluster: Sim) -> None:
    """software.ascend_docker_runtime (the simulator's .run, built like the real one's layout): installed on
    the NPU server only, registered in daemon.json as the engine's default runtime (what `docker info`
    says, not only the file), and a second apply runs no installer and changes nothing."""
    from ascend_sim.docker_runtime_package import LOG, build_docker_runtime_package
    from ascend_sim.packages import sha256_of
    from ascend_sim.spec_writer import ARCH

    root, base = engine_cluster.root, engine_cluster.name
    pkg = build_docker_runtime_package("7.0.RC1", root / "adr", arch=ARCH)
    spec = yaml.safe_load((root / "inventories" / base / "site.yaml").read_text())
    spec["site"] = f"{base}-adr"
    spec["software"]["ascend_docker_runtime"] = {
        "version": "7.0.RC1",
        "path": str(pkg),
        "sha256": sha256_of(pkg),
    }
    (root / "inventories" / spec["site"]).mkdir()
    (root / "inventories" / spec["site"] / "site.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))

    def apply() -> dict[str, Any]:
        proc = engine_cluster.cli(
            "apply", spec["site"], "--phases", "host", "--yes", "--format", "json", check=False
        )
        out: dict[str, Any] = json.loads(proc.stdout)
        assert proc.returncode == 0, out["failures"]
        return out

    apply()
    runtimes = "{{json .Runtimes}} {{.DefaultRuntime}}"
    npu, gw = (engine_cluster.exec(h, f"docker info --format '{runtimes}'") for h in HOSTS)
    registered, default = npu.rsplit(" ", 1)
    assert json.loads(registered)["ascend"]["path"].endswith("/Ascend-Docker-Runtime/ascend-docker-runtime")
    assert default.strip() == "ascend"
    assert gw.split()[-1] == "runc" and '"ascend"' not in gw
    runs = engine_cluster.exec("a2-01", f'grep -c "install ok" {LOG}').strip()
    assert runs == "1" and "No such file" in engine_cluster.exec("gw-01", f"cat {LOG} 2>&1")
    again = apply()
    assert changed(again) == {"a2-01": 0, "gw-01": 0}
    assert engine_cluster.exec("a2-01", f'grep -c "install ok" {LOG}').strip() == "1"
