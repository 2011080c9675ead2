"""`orchestrator status` and fleet drift on a served simulated cluster (one Atlas 800T A2 server, every phase
applied):

- the last run of each phase is the apply that served it;
- the replica is healthy, its release and since are the server's release record, its image the image ID
  Docker reports for the running container, no request running, no gateway;
- two slow completions in flight show as 2 requests running (vllm:num_requests_running);
- a replica whose /health answers 503 is reported unhealthy, exit 3;
- the collection as built and installed offline (tests/galaxy.py), its site playbook run by FQCN with
  nothing pointing at the checkout: it repairs a hand-edited sysctl file and a stopped replica;
- every phase tag runs alone with plain ansible-playbook (docs/playbooks.md), in apply mode by FQCN from
  the installed collection (the second run after that repair) and in check mode from the checkout, and
  changes nothing on the served server;
- `orchestrator drift`: every phase in sync after the apply (exit 0); a replica whose /health answers 503 is
  drift in serve only (exit 3); a weights file that no longer matches the manifest is drift in weights
  naming the file (model.source.repair, the default: apply would move it aside and copy it again; exit 3);
  a stopped replica container is drift in serve ("container exited").
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.cli import exits
from tests import galaxy
from tests.integration.sim import goldens
from tests.integration.sim.serving_helpers import sh
from tests.integration.sim.sim_helpers import BIN, ENV, REPO, Sim, recap, site_config

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group(goldens.group("s1"))]

SERVER = "a2-01"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    """A copy of the one-server golden, served by one apply of every phase from bare servers (goldens.py)."""
    yield from goldens.module_golden(tmp_path_factory, "s1")


@pytest.fixture(scope="module")
def served(cluster: Sim) -> dict[str, Any]:
    proc = cluster.converge  # `orchestrator apply SITE --yes --format json` from bare servers
    assert proc is not None
    out: dict[str, Any] = json.loads(proc.stdout)
    assert proc.returncode == 0 and out["result"] == "ok", json.dumps(out)[-4000:] + proc.stderr[-2000:]
    return out


def status(sim: Sim) -> tuple[int, dict[str, Any]]:
    proc = sim.cli("status", sim.name, "--format", "json", check=False)
    assert proc.stdout.count("\n") == 1, proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def replica_container(sim: Sim) -> str:
    hv = yaml.safe_load((sim.root / "inventories" / sim.name / "host_vars" / f"{SERVER}.yml").read_text())
    name: str = hv["vllm_serve_instances"][0]["container_name"]
    return name


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ascend.npu built by `ansible-galaxy collection build` and installed offline from the tarball."""
    tmp = tmp_path_factory.mktemp("collection")
    return galaxy.install(galaxy.build(tmp / "build"), tmp / "installed")


def by_fqcn(cluster: Sim, installed: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """`ansible-playbook -i inventories/<site>/hosts.yml ascend.npu.site` from the project root with the
    rendered ansible.cfg, the installed copy the only ascend.npu and no roles path: the checkout is out."""
    inventory = f"inventories/{cluster.name}/hosts.yml"
    env = galaxy.clean_env(
        **site_config(cluster.root, inventory),
        ANSIBLE_COLLECTIONS_PATH=str(installed.parents[2]),
        ANSIBLE_ROLES_PATH=str(installed.parents[3]),  # holds no role
        LANG="C.UTF-8",
        LC_ALL="C.UTF-8",
        **extra,
    )
    argv = [str(BIN / "ansible-playbook"), "-i", inventory, "ascend.npu.site", *args]
    return subprocess.run(
        argv, cwd=cluster.root, env=env, capture_output=True, text=True, timeout=900, check=False
    )


def test_the_installed_collection_converges_by_fqcn(
    cluster: Sim, served: dict[str, Any], installed: Path
) -> None:
    """The site playbook by FQCN repairs what was changed by hand; the second run, phase by phase, is the
    next test's apply mode (the same installed copy by FQCN): it changes nothing."""
    sysctl_file = "/etc/sysctl.d/90-ascend-orchestrator.conf"
    container = replica_container(cluster)
    _rc, want = sh(cluster, SERVER, f"sha256sum {sysctl_file}")
    sh(cluster, SERVER, f"sed -i 's/^vm.swappiness.*/vm.swappiness = 33/' {sysctl_file}")
    assert sh(cluster, SERVER, f"sha256sum {sysctl_file}")[1] != want
    assert sh(cluster, SERVER, f"docker stop {container}")[0] == 0
    first = by_fqcn(cluster, installed)
    stats = recap(first.stdout)
    assert first.returncode == 0 and stats[SERVER]["failed"] == 0, first.stdout[-4000:] + first.stderr[-2000:]
    assert stats[SERVER]["changed"] > 0, stats
    assert re.search(r"(?m)^TASK \[ascend\.npu\.host_tuning : ", first.stdout)  # the collection's roles
    assert sh(cluster, SERVER, f"sha256sum {sysctl_file}")[1] == want
    assert sh(cluster, SERVER, f"docker inspect -f '{{{{.State.Running}}}}' {container}")[1].strip() == "true"
    rc, doc = status(cluster)
    assert rc == exits.OK and [r["healthy"] for r in doc["replicas"]] == [True], doc


PHASES = [
    p["import_playbook"].removesuffix(".yml")
    for p in yaml.safe_load((REPO / "playbooks" / "site.yml").read_text())
]
# the always-tagged parts every play of every phase runs (tests/unit/test_phase_tags_alone.py)
ALWAYS = ("Validating arguments", "Inventory |", "Phase | record")


def _alone(cluster: Sim, installed: Path, phase: str, check: bool) -> subprocess.CompletedProcess[str]:
    """Apply mode: the installed collection by FQCN (`ascend.npu.site --tags P`) with the rendered
    ansible.cfg from the project root, its fact cache off. Check mode: the README's second way, from the
    checkout's root with its own ansible.cfg (no fact cache)."""
    inventory = f"inventories/{cluster.name}/hosts.yml"
    if not check:
        return by_fqcn(cluster, installed, "--tags", phase, ANSIBLE_CACHE_PLUGIN="memory")
    argv = [str(BIN / "ansible-playbook"), "-i", str(cluster.root / inventory), "playbooks/site.yml"]
    return subprocess.run(
        [*argv, "--tags", phase, "--check", "--diff"],
        cwd=REPO,
        env={**ENV, "ANSIBLE_FORCE_COLOR": "0"},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


@pytest.mark.parametrize("phase", PHASES)
def test_each_phase_tag_runs_alone_in_apply_and_check_mode(
    cluster: Sim, served: dict[str, Any], installed: Path, phase: str
) -> None:
    """`ansible-playbook -i inventories/<site>/hosts.yml ascend.npu.site --tags P` (the installed collection;
    after the previous test's converge, the second run) and `... playbooks/site.yml --tags P --check --diff`
    (the checkout) on the served server, without a fact cache (a new controller, or facts older than the
    cache's timeout): the other phases' plays gather nothing and must not read a fact, P's own tasks run
    where the converging apply ran P, and nothing changes."""
    hosts = {h for p in served["phases"] if p["name"] == phase for h in p["hosts"]}
    for check in (False, True):
        proc = _alone(cluster, installed, phase, check)
        stats = recap(proc.stdout)
        assert proc.returncode == 0 and stats, proc.stdout[-4000:] + proc.stderr[-2000:]
        assert all(s["changed"] == s["failed"] == s["unreachable"] == 0 for s in stats.values()), stats
        own = [t for t in re.findall(r"(?m)^TASK \[(.*)\]", proc.stdout) if not any(w in t for w in ALWAYS)]
        assert own or not hosts, (phase, check, hosts)


def test_status_of_a_served_replica(cluster: Sim, served: dict[str, Any]) -> None:
    rc, doc = status(cluster)
    assert rc == exits.OK, doc
    phases = {p["phase"]: p for p in doc["phases"]}
    for name in ("preflight", "drivers", "host", "network", "image", "weights", "serve"):
        assert (phases[name]["run_id"], phases[name]["status"]) == (served["run_id"], "ok"), phases[name]
    (rep,) = doc["replicas"]
    container = replica_container(cluster)
    code, text = sh(cluster, SERVER, f"cat /var/lib/ascend-orchestrator/releases/{container}.json")
    assert code == 0, text
    record = json.loads(text)["current"]
    code, image = sh(cluster, SERVER, f"docker inspect -f '{{{{.Image}}}}' {container}")
    assert code == 0, image
    assert (rep["healthy"], rep["health"], rep["in_gateway"]) == (True, "HTTP 200", None)
    assert (rep["release"], rep["since"]) == (record["release"], record["time"])
    assert rep["image_id"] == image.strip() and rep["releases"] == {SERVER: record["release"]}
    assert rep["requests_running"] == 0.0
    table = cluster.cli("status", cluster.name).stdout
    assert record["release"] in table and rep["url"] in table


def _complete(url: str, key: str | None, model: str) -> None:
    body = json.dumps({"model": model, "prompt": "The capital of France is", "max_tokens": 4}).encode()
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {key}"} if key else {})
    req = urllib.request.Request(f"{url}/v1/completions", body, headers)
    with urllib.request.urlopen(req, timeout=60) as resp:
        resp.read()


def test_requests_running_and_an_unhealthy_replica(cluster: Sim, served: dict[str, Any]) -> None:
    _, doc = status(cluster)
    url = doc["replicas"][0]["url"]
    key_file = cluster.state_dir / "api-key"
    key = key_file.read_text().strip() if key_file.is_file() else None
    group = yaml.safe_load(
        (cluster.root / "inventories" / cluster.name / "group_vars" / "all.yml").read_text()
    )
    model = group["vllm_serve_served_name"]
    cluster.sim("fault", "vllm", SERVER, "--slow-ms", "15000")
    threads = [threading.Thread(target=_complete, args=(url, key, model), daemon=True) for _ in range(2)]
    try:
        time.sleep(2)  # the fault file is re-read every second
        for t in threads:
            t.start()
        running = None
        deadline = time.monotonic() + 12
        while time.monotonic() < deadline and running != 2.0:
            running = status(cluster)[1]["replicas"][0]["requests_running"]
        assert running == 2.0
    finally:
        cluster.sim("fault", "vllm", SERVER, "--clear")
    for t in threads:
        t.join(timeout=30)

    cluster.sim("fault", "vllm", SERVER, "--never-healthy")
    try:
        deadline = time.monotonic() + 15
        rc, doc = status(cluster)
        while time.monotonic() < deadline and doc["replicas"][0]["healthy"]:
            time.sleep(1)
            rc, doc = status(cluster)
        assert rc == exits.HOSTS_FAILED, doc
        assert (doc["replicas"][0]["healthy"], doc["replicas"][0]["health"]) == (False, "HTTP 503")
    finally:
        cluster.sim("fault", "vllm", SERVER, "--clear")


def drift(sim: Sim, *phases: str) -> tuple[int, dict[str, Any]]:
    extra = ["--phases", ",".join(phases)] if phases else []
    proc = sim.cli("drift", sim.name, *extra, "--format", "json", check=False)
    assert proc.stdout.count("\n") == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout)


def not_in_sync(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(c["host"], c["phase"]): c for c in report["cells"] if c["state"] != "in_sync"}


def test_fleet_drift_image_weights_replica_health(cluster: Sim, served: dict[str, Any]) -> None:
    rc, report = drift(cluster)
    assert (rc, not_in_sync(report)) == (0, {}), report
    assert {c["phase"] for c in report["cells"]} >= {"image", "weights", "serve"}

    cluster.sim("fault", "vllm", SERVER, "--never-healthy")
    try:
        time.sleep(2)  # the fault file is re-read every second
        rc, report = drift(cluster, "serve")
    finally:
        cluster.sim("fault", "vllm", SERVER, "--clear")
    cells = not_in_sync(report)
    assert (rc, list(cells)) == (3, [(SERVER, "serve")]), report
    (change,) = cells[(SERVER, "serve")]["changes"]
    assert "unhealthy" in change["detail"] and "HTTP 503" in change["detail"], change

    group = yaml.safe_load(
        (cluster.root / "inventories" / cluster.name / "group_vars" / "all.yml").read_text()
    )
    weights = group["model_weights_path"]
    code, out = sh(cluster, SERVER, f"ls -S {weights}/*.safetensors | head -1")
    assert code == 0 and out.strip(), out
    shard = out.strip()
    code, out = sh(cluster, SERVER, f"cp -p {shard} /tmp/shard.keep && printf x >> {shard}")
    assert code == 0, out
    try:
        rc, report = drift(cluster, "weights")
    finally:
        code, out = sh(cluster, SERVER, f"cp -p /tmp/shard.keep {shard} && rm /tmp/shard.keep")
        assert code == 0, out
    cells = not_in_sync(report)
    assert (rc, {k: c["state"] for k, c in cells.items()}) == (3, {(SERVER, "weights"): "drift"}), report
    details = [c["detail"] for c in cells[(SERVER, "weights")]["changes"]]
    assert f"mismatched: {shard.rsplit('/', 1)[1]}" in " ".join(details), details

    container = replica_container(cluster)
    code, out = sh(cluster, SERVER, f"docker stop -t 5 {container}")
    assert code == 0, out
    try:
        rc, report = drift(cluster, "serve")
    finally:
        sh(cluster, SERVER, f"docker start {container}")
    cells = not_in_sync(report)
    assert (rc, list(cells)) == (3, [(SERVER, "serve")]), report
    details = [c["detail"] for c in cells[(SERVER, "serve")]["changes"]]
    assert any("container exited" in d for d in details), details
