"""`orchestrator plan` command line: usage errors (64) name the fix, an invalid spec exits 2 before any host
is touched, the help documents the exit codes, and plan needs no --yes (it changes nothing)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.cli import exits
from tests.helpers import load_example, run_cli, to_yaml
from tests.unit.runner.test_apply_cli import SITE, copy_site


def test_phase_and_limit_errors_are_usage_errors(tmp_path: Path) -> None:
    root = copy_site(tmp_path)
    cases = {
        ("--phases", "bogus"): "no phase 'bogus'; the phases are preflight, drivers, host, network, image",
        ("--phases", "host", "--from-phase", "host"): "use either --phases or --from-phase, not both",
        ("--limit", "nope"): "'nope' is neither a host nor a group of this site",
        ("--format", "xml"): "'xml' is not one of 'table', 'json'",
    }
    for args, message in cases.items():
        out = run_cli("--root", str(root), "plan", SITE, *args)
        assert out.returncode == exits.USAGE, (args, out.stderr)
        assert message in " ".join(out.stderr.split()), (args, out.stderr)
        assert "Traceback" not in out.stderr
    assert not (root / ".orchestrator" / "runs").exists()


def test_invalid_spec_exits_2_and_runs_nothing(tmp_path: Path) -> None:
    root = copy_site(tmp_path)
    data = load_example(SITE)
    data["sevrers"] = data.pop("servers")
    (root / "inventories" / SITE / "site.yaml").write_text(to_yaml(data))
    out = run_cli("--root", str(root), "plan", SITE, "--format", "json")
    assert out.returncode == exits.INVALID_SPEC
    assert out.stdout == ""
    assert "unknown key 'sevrers'" in out.stderr
    assert not (root / ".orchestrator").exists()


def test_help_documents_the_exit_codes() -> None:
    text = " ".join(run_cli("plan", "--help").stdout.split())
    for fragment in ("0 the plan ran", "2 invalid spec", "3 the check failed", "4 hosts unreachable"):
        assert fragment in text, fragment
