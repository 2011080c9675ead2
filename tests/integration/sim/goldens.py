"""Converged clusters saved once per test run and restored per module ("goldens").

A golden is a cluster shape (`sim up` arguments) and the phases applied to it from bare servers. The first
module of the run that asks for one (in any pytest-xdist worker: a file lock in the run's shared temp folder
orders them) brings the cluster up, applies, records the apply (exit code, stdout, stderr) and saves the
cluster with `orchestrator sim snapshot save`. Every module that uses it - the first one too - gets a fresh
copy restored with `orchestrator sim snapshot restore`: same names, addresses and project root, booted
again (a restored cluster is a rebooted converged cluster), and `sim down` at the end of the module. The
lock is held while a copy is live, so one module at a time has it (the modules of one golden share an xdist
group, so they run one after another on one worker anyway).

The first restore of each golden in a run proves what the goldens stand for, where no module's own first
test does: `orchestrator apply --check` of the golden's proof phases reports no change on any host, and
every replica answers /health; afterwards the controller's files (history, runs, facts) are put back as
saved, so each module starts from the state the converging apply left. Each module still passes alone: it
builds the golden it needs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from filelock import FileLock

from tests.integration.sim.serving_helpers import sh
from tests.integration.sim.sim_helpers import BIN, Sim, bring_up, run

HOST_LAYER = "preflight,drivers,host,network"
HEALTH_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class Golden:
    key: str  # short: it names the cluster
    up_args: tuple[str, ...]
    phases: str | None  # None: every phase
    serves: bool  # replicas that must answer /health
    # what the first restore checks with `apply --check` (None: nothing; the modules' own tests do it)
    proof: str | None
    # phases applied to a restored copy before its proof and its module (unless the module turns them off):
    # a rebooted gateway host runs an empty router (vllm-router keeps its workers in memory; the gateway
    # phase adds the healthy heads)
    after_restore: str | None = None


GOLDENS = {
    g.key: g
    for g in (
        # one Atlas 800T A2 server, every phase: test_doctor_live, test_status_served (its check run of every
        # phase tag alone and its drift check are the proof)
        Golden("s1", ("--nodes", "1"), None, True, None),
        # three servers in the mixed layout, a gateway and a monitoring host, every phase:
        # test_gateway_phase, test_serve_phase, test_rollout (the last two turn the gateway off in their
        # copy's spec: the gateway's tests drive the router; the host layer of a restored copy is hl's, whose
        # modules prove it), test_pd_serving (its copy's spec turned into the pd layout)
        Golden(
            "mx",
            ("--nodes", "3", "--layout", "mixed", "--gateway", "--monitoring"),
            None,
            True,
            "image,weights",  # serve: test_serve_phase's no-op apply; gateway, monitoring: test_gateway_phase
            "gateway",
        ),
        # three servers (the first two one multi-node replica) and a monitoring host, the host layer:
        # test_host_layer_e2e (its converging apply is this one), test_plan and test_drift (on a2-01 and
        # a2-02, --limit: a converged cluster plans no change, drifts nowhere)
        Golden(
            "hl", ("--nodes", "3", "--span", "2", "--monitoring", "--no-image-base"), HOST_LAYER, False, None
        ),
    )
}


def run_dir(factory: pytest.TempPathFactory) -> Path:
    """The temp folder every xdist worker of this run shares (the worker's own base temp is inside it)."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def group(key: str) -> str:
    """The pytest-xdist group of the modules that use a golden (`--dist loadgroup`)."""
    return f"golden-{key}"


@dataclass
class Paths:
    base: Path

    @property
    def root(self) -> Path:  # the project root of every copy (the spec names files in it)
        return self.base / "root"

    @property
    def snapshot(self) -> Path:
        return self.base / "snapshot"

    @property
    def converge(self) -> Path:
        return self.base / "converge.json"

    @property
    def proved(self) -> Path:
        return self.base / "proved"


def cluster_name(golden: Golden, base: Path) -> str:
    """Unique per run (several runs may share the machine): the key and a hash of the run's folder."""
    return f"g{golden.key}-{hashlib.sha256(str(base).encode()).hexdigest()[:6]}"


def apply_argv(sim: Sim, phases: str | None, *extra: str) -> list[str]:
    chosen = ["--phases", phases] if phases else []
    return [str(BIN / "orchestrator"), "apply", sim.name, "--yes", "--format", "json", *chosen, *extra]


def timed(key: str, step: str, started: float) -> None:
    """One line of $TEST_REPORTS/goldens.jsonl (scripts/test_budget.py report sums them): what a golden's
    step took, so the budget shows what the goldens cost and what they save."""
    reports = os.environ.get("TEST_REPORTS")
    if reports and Path(reports).is_dir():
        line = {"golden": key, "step": step, "seconds": round(time.monotonic() - started, 1)}
        with (Path(reports) / "goldens.jsonl").open("a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")


def _converge(golden: Golden, paths: Paths, name: str) -> subprocess.CompletedProcess[str]:
    """Bring the golden up from bare servers, apply its phases, save it; returns the apply."""
    shutil.rmtree(paths.root, ignore_errors=True)
    paths.root.mkdir(parents=True)
    started = time.monotonic()
    sim = bring_up(paths.root, name, *golden.up_args)
    timed(golden.key, "sim up", started)
    started = time.monotonic()
    proc = run(apply_argv(sim, golden.phases), paths.root, check=False, timeout=2400)
    timed(golden.key, "converge", started)
    record = {
        "argv": proc.args,
        "returncode": proc.returncode,
        "stdout": proc.stdout,
        "stderr": proc.stderr,
        "seconds": round(time.monotonic() - started, 1),
    }
    if proc.returncode == 0:
        started = time.monotonic()
        sim.sim("snapshot", "save", str(paths.snapshot))
        timed(golden.key, "save", started)
    else:
        sim.sim("down", check=False)
    paths.converge.write_text(json.dumps(record), encoding="utf-8")
    return proc


def _recorded(paths: Paths) -> subprocess.CompletedProcess[str]:
    rec = json.loads(paths.converge.read_text(encoding="utf-8"))
    return subprocess.CompletedProcess(rec["argv"], rec["returncode"], rec["stdout"], rec["stderr"])


def replica_health_urls(sim: Sim) -> list[str]:
    group_vars = sim.root / "inventories" / sim.name / "group_vars" / "all.yml"
    replicas = yaml.safe_load(group_vars.read_text(encoding="utf-8")).get("rollout_replicas") or []
    return [str(r["endpoint"]).removesuffix("/v1") + "/health" for r in replicas]


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return int(resp.status)
    except OSError:
        return 0


def serving_state(sim: Sim) -> str:
    """What each NPU server's Docker says of its containers, and the last log lines of each: for the message
    of a restore whose replicas did not come back (the fixture tears the cluster down before anyone looks)."""
    group_vars = sim.root / "inventories" / sim.name / "group_vars" / "all.yml"
    replicas = yaml.safe_load(group_vars.read_text(encoding="utf-8")).get("rollout_replicas") or []
    servers = sorted({str(m) for r in replicas for m in r.get("members") or []})
    out = []
    for server in servers:
        script = "docker ps -a --format '{{.Names}} {{.Status}}'; for c in $(docker ps -aq); do "
        script += "echo \"--- $(docker inspect -f '{{.Name}}' $c)\"; docker logs --tail 15 $c 2>&1; done"
        rc, text = sh(sim, server, script)
        out.append(f"=== {server} (rc {rc})\n{text[-4000:]}")
    return "\n".join(out)


def wait_replicas(sim: Sim, timeout_s: float = HEALTH_TIMEOUT_S) -> dict[str, int]:
    """Every replica's /health, polled until all answer 200 or the time is up; the last status of each."""
    urls = replica_health_urls(sim)
    assert urls, "a serving golden without replicas in its inventory"
    deadline = time.monotonic() + timeout_s
    while True:
        seen = {u: _status(u) for u in urls}
        if set(seen.values()) == {200} or time.monotonic() > deadline:
            return seen
        time.sleep(0.5)


def _reset_controller(paths: Paths, sim: Sim) -> None:
    """The controller's files as saved (history, runs, facts, baselines), not what the proof added; the
    cluster's sim folder stays (its fabric is mounted into the running servers)."""
    saved = paths.snapshot / "controller" / ".orchestrator"
    live = paths.root / ".orchestrator"
    for child in list(live.iterdir()):
        if child.name == "sim":
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    for child in saved.iterdir():
        if child.name == "sim":
            continue
        if child.is_dir():
            shutil.copytree(child, live / child.name, symlinks=True)
        else:
            shutil.copy2(child, live / child.name)
    assert (paths.root / "inventories" / sim.name / "site.yaml").is_file()


def _after_restore(golden: Golden, paths: Paths, sim: Sim) -> None:
    """Apply the golden's after-restore phases; the controller's files stay as saved (no run recorded)."""
    assert golden.after_restore
    proc = run(apply_argv(sim, golden.after_restore), paths.root, check=False, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    _reset_controller(paths, sim)


def _prove(golden: Golden, paths: Paths, sim: Sim) -> None:
    """apply --check changes nothing on a restored copy, and every replica answers /health."""
    assert golden.proof
    proc = run(apply_argv(sim, golden.proof, "--check"), paths.root, check=False, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    changed = {
        (p["name"], host): c["changed"]
        for p in out["phases"]
        for host, c in p["hosts"].items()
        if c["changed"]
    }
    assert changed == {}, f"a restored {golden.key} is not converged: {changed}"
    ran = [p["name"] for p in out["phases"] if p["status"] == "ok"]
    assert ran and set(ran) <= set(golden.proof.split(",")), ran  # a phase with no host here is skipped
    if golden.serves:
        health = wait_replicas(sim, 0)
        assert set(health.values()) == {200}, health
    _reset_controller(paths, sim)
    paths.proved.write_text(json.dumps({"check_seconds": out.get("seconds")}), encoding="utf-8")


def module_golden(factory: pytest.TempPathFactory, key: str, *, after_restore: bool = True) -> Iterator[Sim]:
    """A fresh copy of golden ``key`` for one module (``sim.converge``: the apply that converged it).
    after_restore=False: the golden's after-restore phases are not applied (a module that turns the gateway
    off in its copy, gateway_off, has no use for a router filled again: 42 s per copy in CI)."""
    golden = GOLDENS[key]
    paths = Paths(run_dir(factory) / "goldens" / key)
    paths.base.mkdir(parents=True, exist_ok=True)
    name = cluster_name(golden, paths.base)
    with FileLock(str(paths.base) + ".lock"):
        converge = _recorded(paths) if paths.converge.is_file() else _converge(golden, paths, name)
        if converge.returncode != 0:
            pytest.fail(
                f"golden {key}: the converging apply exited {converge.returncode}\n"
                f"{converge.stdout[-3000:]}\n{converge.stderr[-3000:]}"
            )
        shutil.rmtree(paths.root, ignore_errors=True)
        paths.root.mkdir(parents=True)
        sim = Sim(paths.root, name, "", converge=converge)
        started = time.monotonic()
        sim.cli("--root", str(paths.root), "sim", "snapshot", "restore", str(paths.snapshot))
        try:
            if golden.serves:
                health = wait_replicas(sim)
                if set(health.values()) != {200}:
                    state = serving_state(sim)
                    pytest.fail(f"golden {key} restored, replicas not healthy: {health}\n{state}")
            timed(key, "restore", started)
            if golden.after_restore and after_restore:
                started = time.monotonic()
                _after_restore(golden, paths, sim)
                timed(key, "after restore", started)
            if golden.proof and not paths.proved.exists():
                started = time.monotonic()
                _prove(golden, paths, sim)
                timed(key, "proof", started)
            yield sim
        finally:
            sim.sim("down", check=False)


def quiet_monitoring(sim: Sim) -> None:
    """Stop Prometheus on the copy's monitoring host. Its scrapes are what an idle simulated cluster spends
    CPU on: node exporter reads the simulated sysfs (192 CPUs) through the simulator's FUSE kernel, about
    12 CPU s per minute per NPU server at the sim spec's 15 s interval, 0.2 with no scraper (measured)."""
    rc, out = sh(sim, "mon-01", "systemctl stop prometheus")
    assert rc == 0, out


def gateway_off(sim: Sim) -> Sim:
    """The copy as a site without a gateway: off in its spec and the router on gw-01 stopped; Prometheus
    stopped too (quiet_monitoring; these modules read no metric). The serve phase then rolls replicas
    without draining them from a router."""
    site = sim.root / "inventories" / sim.name / "site.yaml"
    text = site.read_text(encoding="utf-8")
    assert text.count("gateway:\n  enabled: true\n") == 1, text
    off = text.replace("gateway:\n  enabled: true\n", "gateway:\n  enabled: false\n")
    site.write_text(off, encoding="utf-8")
    rc, out = sh(sim, "gw-01", "docker stop vllm-router")
    assert rc == 0, out
    quiet_monitoring(sim)
    return sim


def remove_all(run: Path) -> None:
    """The run's snapshots (images, volumes, folders), and those of earlier runs that were killed before
    they could remove theirs: called once, when the whole run ends."""
    for argv in [["rm", str(snap)] for snap in sorted((run / "goldens").glob("*/snapshot"))] + [["prune"]]:
        subprocess.run(
            [str(BIN / "orchestrator"), "sim", "snapshot", *argv],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
