"""docs/troubleshooting.md is what `orchestrator docs --troubleshooting` generates from doctor's rules."""

from __future__ import annotations

from pathlib import Path

from orchestrator.doctor.live_checks import CHECKS
from orchestrator.doctor.rules import RULES
from orchestrator.doctor.troubleshooting import troubleshooting_reference
from tests.helpers import ROOT, run_cli

DOC = ROOT / "docs/troubleshooting.md"


def test_committed_troubleshooting_guide_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == troubleshooting_reference(), (
        "docs/troubleshooting.md is stale: run "
        "`orchestrator docs --troubleshooting --write docs/troubleshooting.md`"
    )
    assert run_cli("docs", "--troubleshooting", "--check", "docs/troubleshooting.md").returncode == 0


def test_check_fails_on_a_stale_guide(tmp_path: Path) -> None:
    stale = tmp_path / "troubleshooting.md"
    stale.write_text(DOC.read_text(encoding="utf-8").replace("HCCL_BUFFSIZE", "HCCL_BUFSIZE", 1))
    out = run_cli("docs", "--troubleshooting", "--check", str(stale))
    assert out.returncode == 1
    assert f"run 'orchestrator docs --troubleshooting --write {stale}'" in out.stderr


def test_guide_lists_every_rule_with_its_sources() -> None:
    text = troubleshooting_reference()
    for r in RULES:
        assert f'<a id="{r.id}"></a>' in text and f"[`{r.id}`](#{r.id})" in text, r.id
        for source in r.sources:
            assert f"- <{source}>" in text, (r.id, source)
        if r.patterns:
            assert f"```text\n{r.example}\n```" in text, r.id


def test_guide_lists_every_live_check_with_its_fix() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "orchestrator doctor SITE [--host H ...]" in text
    for c in CHECKS:
        row = [line for line in text.splitlines() if line.startswith(f"| `{c.name}` |")]
        assert len(row) == 1 and c.fix[1:] in row[0], c.name
