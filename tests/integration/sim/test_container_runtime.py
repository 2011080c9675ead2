"""Role container_runtime through `orchestrator apply --phases host` on the simulated cluster (an NPU server
and a gateway host, both in the group container_runtime): converge, the running engine uses daemon.json,
a second apply changes nothing, and check mode reports exactly the host whose daemon.json was edited
(without touching it); a normal apply then puts it back.

Needs the simulator's /etc/init.d/docker that drives the simulated server's dockerd (images/sim-server)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.sim.sim_helpers import Sim, module_cluster

pytestmark = pytest.mark.integration

HOSTS = ["a2-01", "gw-01"]
DAEMON_JSON = "/etc/docker/daemon.json"


@pytest.fixture(scope="module")
def engine_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from module_cluster(tmp_path_factory, "itc", "--nodes", "1", "--gateway")


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
