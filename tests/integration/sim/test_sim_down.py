"""`sim down` leaves no container, volume, image tag or file of the cluster behind (the cached base image
stays), also for the extra gateway and monitoring hosts; and `sim up` never takes over a hand-written site."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ascend_sim import images
from tests.integration.sim.sim_helpers import Sim, bring_up, engine

pytestmark = pytest.mark.integration


def test_down_leaves_nothing(tmp_path: Path) -> None:
    sim = bring_up(tmp_path, f"itd{os.getpid() % 100000}", "--nodes", "1", "--gateway", "--monitoring")
    label = {"label": f"io.ascend-sim.cluster={sim.name}"}
    docker = engine()
    names = sorted(c.name for c in docker.containers.list(all=True, filters=label))
    assert names == [sim.container(s) for s in ("a2-01", "gw-01", "mon-01")]
    assert "gw-01" in (tmp_path / "inventories" / sim.name / "site.yaml").read_text()

    out = sim.sim("down").stdout
    assert "removed container" in out and "removed volume" in out and "removed image" in out
    assert docker.containers.list(all=True, filters=label) == []
    assert docker.volumes.list(filters=label) == []
    assert docker.images.list(filters=label) == []
    assert images.image_exists(docker, images.base_tag())  # the cache is kept unless --purge
    assert list(tmp_path.iterdir()) == []
    assert "nothing to remove" in sim.sim("down").stdout


def test_up_refuses_a_hand_written_site(tmp_path: Path) -> None:
    site = tmp_path / "inventories" / "mine" / "site.yaml"
    site.parent.mkdir(parents=True)
    site.write_text("site: mine\n")
    proc = Sim(tmp_path, "mine", "").sim("up", check=False)
    assert proc.returncode == 1
    assert (
        "was not written by `orchestrator sim up`" in proc.stderr
        and "Fix: pick another --name" in proc.stderr
    )
    assert site.read_text() == "site: mine\n"
    assert not (tmp_path / ".orchestrator").exists()
