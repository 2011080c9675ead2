"""`orchestrator apply` command line: usage errors (64) name the fix, an invalid spec exits 2 before any
host is touched, a run without a terminal needs --yes, the exit code follows the run's result, and the
help documents the exit codes."""

from __future__ import annotations

from pathlib import Path

import yaml

from orchestrator.cli import exits
from orchestrator.cli.apply_cmd import exit_code
from orchestrator.cli.site_run import resolve_limit
from orchestrator.render.groups import group_members
from orchestrator.runner.model import Failure, HostStats, PhaseResult, PhaseStatus, Run
from tests.helpers import ROOT, copy_ready_site, load_example, run_cli, to_yaml, validate_data

SITE = "a2-fleet-gateway"


def copy_site(tmp_path: Path, name: str = SITE) -> Path:
    return copy_ready_site(tmp_path, name)


def test_phase_selection_errors_are_usage_errors(tmp_path: Path) -> None:
    root = copy_site(tmp_path)
    cases = {
        ("--phases", "bogus"): "no phase 'bogus'; the phases are preflight, drivers, host, network, image",
        ("--phases", "host", "--from-phase", "host"): "use either --phases or --from-phase, not both",
        ("--phases", ","): "name at least one phase",
        ("--limit", "nope"): "'nope' is neither a host nor a group of this site; hosts: a2-01, a2-02, a2-03, "
        "a2-04, edge-01; groups: build, container_runtime, gateway, monitoring, npu",
    }
    for args, message in cases.items():
        out = run_cli("--root", str(root), "apply", SITE, "--yes", *args)
        assert out.returncode == exits.USAGE, (args, out.stderr)
        assert message in " ".join(out.stderr.split()), (args, out.stderr)
        assert "Traceback" not in out.stderr
    assert not (root / ".orchestrator" / "runs").exists()


def test_without_a_terminal_apply_needs_yes(tmp_path: Path) -> None:
    root = copy_site(tmp_path)
    out = run_cli("--root", str(root), "apply", SITE, "--limit", "edge-01")
    assert out.returncode == exits.USAGE
    assert "stdin is not a terminal. Fix: pass --yes" in " ".join(out.stderr.split())
    assert not (root / ".orchestrator" / "runs").exists()


def test_invalid_spec_exits_2_and_runs_nothing(tmp_path: Path) -> None:
    root = copy_site(tmp_path)
    data = load_example(SITE)
    data["sevrers"] = data.pop("servers")
    (root / "inventories" / SITE / "site.yaml").write_text(to_yaml(data))
    out = run_cli("--root", str(root), "apply", SITE, "--yes", "--format", "json")
    assert out.returncode == exits.INVALID_SPEC
    assert out.stdout == ""
    assert "unknown key 'sevrers'" in out.stderr
    assert not (root / ".orchestrator").exists()


def test_help_documents_the_exit_codes() -> None:
    out = run_cli("apply", "--help")
    text = " ".join(out.stdout.split())
    for fragment in ("0 ok", "2 invalid spec", "3 a host failed", "4 hosts unreachable", "130 interrupted"):
        assert fragment in text, fragment


def test_limit_takes_hosts_and_groups_of_the_rendered_inventory() -> None:
    result = validate_data(load_example(SITE))
    assert result.spec is not None and result.plan is not None
    groups = group_members(result.spec, result.plan)
    # the groups --limit knows are the rendered hosts.yml's, child groups expanded
    rendered = yaml.safe_load((ROOT / "inventories" / SITE / "hosts.yml").read_text())["all"]["children"]
    assert set(groups) == set(rendered)
    names = ["a2-01", "a2-02", "a2-03", "a2-04", "edge-01"]
    assert resolve_limit("gateway,a2-02", groups, names) == {"edge-01", "a2-02"}
    assert resolve_limit("rollout_default", groups, names) == {"a2-01", "a2-02", "a2-03", "a2-04"}
    assert resolve_limit("phase_gateway", groups, names) == {"edge-01"}
    assert resolve_limit(None, groups, names) is None


def phase(name: str, status: PhaseStatus, **hosts: HostStats) -> PhaseResult:
    return PhaseResult(name, status, dict(hosts))


def test_exit_code_failed_wins_over_unreachable_and_interrupted_wins_over_both() -> None:
    ok = Run("r", "s", False, [phase("preflight", PhaseStatus.OK, a=HostStats(ok=3))])
    assert exit_code(ok) == 0
    gone = Failure("preflight", "b", "Gathering Facts", "ssh", unreachable=True)
    bad = Failure("drivers", "a", "install", "rc 1")
    unreachable = Run("r", "s", False, [phase("preflight", PhaseStatus.FAILED)])
    unreachable.phases[0].failures = [gone]
    assert exit_code(unreachable) == 4
    both = Run(
        "r", "s", False, [phase("preflight", PhaseStatus.FAILED), phase("drivers", PhaseStatus.FAILED)]
    )
    both.phases[0].failures, both.phases[1].failures = [gone], [bad]
    assert exit_code(both) == 3
    stopped = Run("r", "s", False, [phase("network", PhaseStatus.STOPPED)])
    assert exit_code(stopped) == 3
    both.interrupted = True
    assert exit_code(both) == 130
