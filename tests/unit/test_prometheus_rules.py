"""The alert rules of roles/prometheus/files/rules/ through Prometheus's own promtool.

`promtool check rules` parses every rule (PromQL, templates, durations); `promtool test rules` runs the unit
tests in tests/data/promtool/*.test.yml, which feed each alert series and check when it fires, with which
labels and annotations. Every alert needs a firing and a non-firing case there, and a rules file with a
broken threshold, duration or comparison must fail those tests (proved below on copies).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import ROOT
from tests.promtool import run

RULES = ROOT / "roles" / "prometheus" / "files" / "rules" / "ascend-fleet.rules.yml"
TESTS = ROOT / "tests" / "data" / "promtool"
SEVERITIES = {"critical", "warning"}


def _rules() -> list[dict[str, Any]]:
    data = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    return [rule for group in data["groups"] for rule in group["rules"]]


def _alert_cases() -> dict[str, list[bool]]:
    """alertname -> one entry per alert_rule_test case: whether it expects the alert to fire."""
    cases: dict[str, list[bool]] = {}
    for path in sorted(TESTS.glob("*.test.yml")):
        for test in yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]:
            for case in test.get("alert_rule_test", []):
                cases.setdefault(case["alertname"], []).append(bool(case.get("exp_alerts")))
    return cases


def _test_files() -> list[str]:
    files = sorted(str(p) for p in TESTS.glob("*.test.yml"))
    assert files, f"no promtool unit tests in {TESTS}"
    return files


def test_promtool_checks_the_rules() -> None:
    out = run("check", "rules", str(RULES))
    assert out.returncode == 0, out.stdout
    assert f"SUCCESS: {len(_rules())} rules found" in out.stdout


def test_promtool_unit_tests_of_the_rules_pass() -> None:
    out = run("test", "rules", *_test_files())
    assert out.returncode == 0, out.stdout
    assert out.stdout.count("SUCCESS") == len(_test_files())


def test_every_alert_has_a_firing_and_a_quiet_case() -> None:
    cases = _alert_cases()
    missing = [
        (r["alert"], "firing" if True not in cases.get(r["alert"], []) else "non-firing")
        for r in _rules()
        if set(cases.get(r["alert"], [])) != {True, False}
    ]
    assert missing == []
    assert set(cases) <= {r["alert"] for r in _rules()}  # no test of an alert that does not exist


def test_every_rule_names_its_severity_its_server_and_the_fix() -> None:
    for rule in _rules():
        name = rule["alert"]
        assert re.fullmatch(r"\d+[smh]", rule["for"]), name
        assert rule["labels"]["severity"] in SEVERITIES, name
        summary, description = rule["annotations"]["summary"], rule["annotations"]["description"]
        assert "$labels.host" in summary + description, name
        assert "Fix:" in description, name


def _broken_copy(tmp_path: Path, old: str, new: str) -> list[str]:
    """The rules with one edit, and the unit tests pointed at that copy."""
    text = RULES.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    (tmp_path / "rules.yml").write_text(text.replace(old, new), encoding="utf-8")
    files = []
    for path in sorted(TESTS.glob("*.test.yml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        data["rule_files"] = ["rules.yml"]
        (tmp_path / path.name).write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        files.append(path.name)
    return files


@pytest.mark.parametrize(
    "alert,old,new",
    [
        ("VllmKvCacheNearlyFull", "vllm:kv_cache_usage_perc > 0.95", "vllm:kv_cache_usage_perc > 0.98"),
        ("NpuHbmNearlyFull", "> 0) > 0.95", "> 0) > 0.93"),
        ("NpuUnhealthy", "npu_chip_info_health_status == 0", "npu_chip_info_health_status <= 0"),
        ("NpuNicLinkDown", "link_status == 0\n        for: 2m", "link_status == 0\n        for: 5m"),
        ("DriftCheckStale", "> 13 * 3600", "> 15 * 3600"),
        ("DriftCheckBroken", "last_run_exit_code == 2", "last_run_exit_code != 0"),
        ("NpuExporterDown", 'up{job="npu-exporter"} == 0', 'up{job="npu_exporter"} == 0'),
    ],
)  # fmt: skip
def test_a_broken_rule_fails_the_unit_tests(tmp_path: Path, alert: str, old: str, new: str) -> None:
    files = _broken_copy(tmp_path, old, new)
    assert run("check", "rules", "rules.yml", cwd=tmp_path).returncode == 0  # still a valid rule
    out = run("test", "rules", *files, cwd=tmp_path)
    assert out.returncode != 0, out.stdout
    assert f"alertname: {alert}" in out.stdout, out.stdout


def test_the_unmodified_copy_passes(tmp_path: Path) -> None:
    """The copy mechanism itself changes nothing: only the edit makes the tests above fail."""
    files = _broken_copy(tmp_path, "groups:", "groups:")
    out = run("test", "rules", *files, cwd=tmp_path)
    assert out.returncode == 0, out.stdout


def test_promtool_refuses_a_malformed_rule(tmp_path: Path) -> None:
    broken = RULES.read_text(encoding="utf-8").replace(
        "expr: vllm:kv_cache_usage_perc > 0.95", "expr: vllm:kv_cache_usage_perc >"
    )
    (tmp_path / "rules.yml").write_text(broken, encoding="utf-8")
    out = run("check", "rules", str(tmp_path / "rules.yml"))
    assert out.returncode != 0
    assert "FAILED" in out.stdout


def test_the_docs_table_lists_every_alert() -> None:
    """docs/monitoring.md's alerts table: exactly the alerts of the rules file, same severity and `for:`."""
    text = (ROOT / "docs" / "monitoring.md").read_text(encoding="utf-8")
    section = text.split("\n## Alerts\n", 1)[1].split("\n## ", 1)[0]
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")[:3]]
        for line in section.splitlines()
        if line.startswith("| `")
    ]
    documented = [(name.strip("`"), severity, duration) for name, severity, duration in rows]
    rules = [(r["alert"], r["labels"]["severity"], r["for"]) for r in _rules()]
    assert documented == rules
