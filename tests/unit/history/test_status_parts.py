"""`orchestrator status`'s parts: playbooks/status.yml reading release records through ansible-runner
(local connection; a server without a record, an unreachable one), the live probes against HTTP servers
that answer like vLLM (the fake vLLM's own /metrics text) and vllm-router (/list_workers), the replicas of
a committed inventory, and the last run per phase."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from fake_vllm.metrics import Metrics
from orchestrator.cli import exits
from orchestrator.cli.status_cmd import exit_code
from orchestrator.history.db import RunRecord
from orchestrator.history.last_runs import last_per_phase
from orchestrator.render.ansible_cfg import ansible_cfg_text
from orchestrator.runner.project import Content
from orchestrator.status.fleet import Replica, Site, fleet_state, read_site
from orchestrator.status.releases import Releases, read_releases
from tests.helpers import ROOT, load_example

Routes = dict[str, tuple[int, str]]  # path -> (status, body), as conftest's serve() answers

RECORD = {
    "current": {
        "release": "0123456789abcdef",
        "image_id": "sha256:" + "ab" * 32,
        "time": "2026-12-04T20:00:00Z",
    },
    "previous": None,
}


def test_status_playbook_reads_the_release_records(tmp_path: Path) -> None:
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inst = [{"container_name": "vllm-r1", "replica": "r1"}, {"container_name": "vllm-r2", "replica": "r2"}]
    hosts: dict[str, dict[str, object]] = {}
    for h in ("h1", "h2"):
        hosts[h] = {**local, "vllm_serve_instances": inst, "vllm_serve_release_dir": str(tmp_path / h)}
        (tmp_path / h).mkdir()
    (tmp_path / "h1" / "vllm-r1.json").write_text(json.dumps(RECORD))
    hosts["h3"] = {"ansible_host": "127.0.0.1", "ansible_port": 1, "vllm_serve_instances": inst}
    inv = tmp_path / "inventory"
    inv.mkdir()
    (inv / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"npu": {"hosts": hosts}}}}))
    (inv / "ansible.cfg").write_text(ansible_cfg_text("t", 3, "# test\n"))
    before = {p: p.read_bytes() for p in tmp_path.glob("h*/*")}
    got = read_releases(Content(ROOT), inv, tmp_path / "facts", ("h1", "h2", "h3"))
    assert got.records["h1"] == {"vllm-r1": RECORD, "vllm-r2": None}
    assert got.records["h2"] == {"vllm-r1": None, "vllm-r2": None}
    assert "h3" not in got.records and set(got.unreachable) == {"h3"} and got.failed == {}
    assert got.current("h1", "vllm-r1") == RECORD["current"]
    assert {p: p.read_bytes() for p in tmp_path.glob("h*/*")} == before  # read-only


def test_fleet_state_from_live_endpoints(serve: Callable[[Routes], str]) -> None:
    metrics = Metrics("m", [0, 1], 1000, {})
    for engine, prompt in ((0, "a"), (0, "b"), (1, "c")):
        metrics.started(engine, prompt, 5)
    start = serve
    r1 = start({"/health": (200, ""), "/metrics": (200, metrics.render())})
    r2 = start({"/health": (503, ""), "/metrics": (200, Metrics("m", [0], 10, {}).render())})
    gateway = start({"/list_workers": (200, json.dumps({"urls": [r1 + "/"]}))})
    site = Site(
        "lab",
        (
            Replica("r1", "h1", ("h1",), r1, {"h1": "vllm-r1"}),
            Replica("r2", "h2", ("h2",), r2, {"h2": "vllm-r2"}),
            Replica("r3", "h3", ("h3",), "http://127.0.0.1:9", {"h3": "vllm-r3"}),
        ),
        gateway,
        ("h1", "h2", "h3"),
    )
    releases = Releases(records={"h1": {"vllm-r1": RECORD}, "h2": {"vllm-r2": None}}, unreachable={"h3": "x"})
    fleet = fleet_state(site, releases)
    one, two, three = fleet.replicas
    assert (one.healthy, one.requests_running, one.in_gateway, one.release) == (
        True,
        3.0,
        True,
        "0123456789abcdef",
    )
    assert one.image_id == RECORD["current"]["image_id"] and one.since == "2026-12-04T20:00:00Z"
    assert (two.healthy, two.health, two.requests_running, two.in_gateway, two.release) == (
        False,
        "HTTP 503",
        0.0,
        False,
        None,
    )
    assert (three.healthy, three.requests_running, three.releases) == (False, None, {"h3": "unreachable"})
    assert three.health.startswith("no answer")
    assert exit_code(fleet) == exits.HOSTS_FAILED
    healthy = Site("lab", site.replicas[:1], gateway, ("h1",))
    assert exit_code(fleet_state(healthy, releases)) == exits.HOSTS_UNREACHABLE  # h3's records unread
    assert exit_code(fleet_state(healthy, Releases(records=releases.records))) == exits.OK


def test_replicas_of_a_committed_inventory() -> None:
    spec = load_example("a2-fleet-gateway")
    site = read_site(ROOT / "inventories" / "a2-fleet-gateway")
    assert site.name == spec["site"]
    assert [r.name for r in site.replicas] == [r["name"] for r in spec["serving"]["replicas"]]
    r1 = site.replicas[0]
    assert (r1.head, r1.url, r1.containers) == ("a2-01", "http://10.50.0.11:8000", {"a2-01": "vllm-r1"})
    assert site.gateway_url == "http://10.50.0.5:8080"
    assert site.servers == ("a2-01", "a2-02", "a2-03", "a2-04")


def test_last_run_per_phase_skips_check_runs_and_phases_that_did_not_run() -> None:
    def rec(run_id: str, kind: str, phases: dict[str, str], check: bool = False) -> RunRecord:
        ph = [{"name": n, "status": s, "seconds": 1.0} for n, s in phases.items()]
        return RunRecord(run_id, kind, "lab", run_id, result="ok", check_mode=check, phases=ph)

    newest_first = [
        rec("4", "apply", {"preflight": "ok", "serve": "ok"}, check=True),
        rec("3", "rollback", {"serve": "failed"}),
        rec("2", "plan", {"preflight": "ok"}),
        rec("1", "apply", {"preflight": "ok", "drivers": "interrupted", "host": "not_run"}),
    ]
    found = last_per_phase(newest_first, ["preflight", "drivers", "host", "serve"])
    got = {p.phase: (p.run.run_id if p.run else None, p.status) for p in found}
    assert got == {
        "preflight": ("1", "ok"),
        "drivers": ("1", "interrupted"),
        "host": (None, ""),
        "serve": ("3", "failed"),
    }
