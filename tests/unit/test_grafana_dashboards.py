"""The Grafana dashboards (roles/grafana_dashboards/files/*.json), checked without a Grafana (none is packaged
for Debian 12; docs/monitoring.md):

- the JSON model Grafana's file provisioning needs: uid, title, schemaVersion, panels with type, title,
  gridPos and targets, a fixed datasource uid (provisioning does not resolve ${DS_*} import placeholders,
  grafana/grafana#10786) and unique panel ids;
- every panel query and template-variable selector parses as PromQL: they are written into a recording-rules
  file (Grafana's $variables replaced by values) and checked by Prometheus's own `promtool check rules`;
- every metric a query names is one the exporters define (tests/data/grafana/known-metrics.yml, with sources).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import ROOT
from tests.promtool import run

FILES = ROOT / "roles" / "grafana_dashboards" / "files"
DASHBOARDS = sorted(FILES.glob("*.json"))
DATASOURCE = {"type": "prometheus", "uid": "prometheus"}
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$replica": ".*", "$host": ".*"}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left",
            "group_right", "inf", "nan"}  # fmt: skip
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def _load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _queries(board: dict[str, Any]) -> list[str]:
    """Every PromQL expression of the dashboard: panel targets and the selectors of label_values()."""
    out = [t["expr"] for p in board["panels"] for t in p["targets"]]
    for var in board["templating"]["list"]:
        found = re.fullmatch(r"label_values\((.+),\s*\w+\)", var["query"]["query"])
        assert found, var["query"]["query"]
        out.append(found.group(1))
    return out


def _concrete(expr: str) -> str:
    for name, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(name, value)
    assert "$" not in expr, f"a Grafana variable this test does not know: {expr}"
    return expr


def metric_names(expr: str) -> set[str]:
    """Metric names a PromQL expression selects (not functions, keywords, labels, strings or durations)."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    s = re.sub(r"\{[^}]*\}", " ", s)
    s = re.sub(r"\[[^\]]*\]", " ", s)
    s = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", s)
    names = set()
    for m in re.finditer(r"(?<![\w:.])[a-zA-Z_:][a-zA-Z0-9_:]*", s):
        if s[m.end() :].lstrip().startswith("(") or m.group(0).lower() in KEYWORDS:
            continue
        names.add(m.group(0))
    return names


def _known() -> set[str]:
    data = yaml.safe_load((ROOT / "tests" / "data" / "grafana" / "known-metrics.yml").read_text())
    known: set[str] = set()
    for exporter in data.values():
        known.update(exporter.get("metrics", []))
        known.update(h + s for h in exporter.get("histograms", []) for s in HISTOGRAM_SUFFIXES)
    return known


def test_both_dashboards_exist() -> None:
    assert [p.name for p in DASHBOARDS] == ["ascend-fleet.json", "ascend-npu.json"]


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_the_dashboard_has_what_grafana_provisioning_needs(path: Path) -> None:
    board = _load(path)
    assert re.fullmatch(r"[a-z0-9-]{8,40}", board["uid"]), board["uid"]
    assert board["uid"] == path.stem
    assert board["title"] and isinstance(board["schemaVersion"], int) and board["schemaVersion"] >= 36
    assert board.get("id") is None  # provisioned dashboards get their id from Grafana
    assert "__inputs" not in board and "${DS_" not in path.read_text(encoding="utf-8")
    assert board["panels"]
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        assert panel["type"] in {"timeseries", "stat", "state-timeline"} and panel["title"], panel
        grid = panel["gridPos"]
        assert 1 <= grid["w"] <= 24 and grid["x"] + grid["w"] <= 24 and grid["h"] >= 1 and grid["y"] >= 0
        assert panel["datasource"] == DATASOURCE
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == DATASOURCE and target["refId"] and target["expr"]
    for var in board["templating"]["list"]:
        assert var["datasource"] == DATASOURCE


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_every_query_parses_with_promtool(tmp_path: Path, path: Path) -> None:
    rules = [
        {"record": f"dashboard:query_{i}", "expr": _concrete(expr)}
        for i, expr in enumerate(_queries(_load(path)))
    ]
    file = tmp_path / "queries.yml"
    file.write_text(yaml.safe_dump({"groups": [{"name": path.stem, "rules": rules}]}), encoding="utf-8")
    out = run("check", "rules", str(file))
    assert out.returncode == 0, out.stdout
    assert f"SUCCESS: {len(rules)} rules found" in out.stdout


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_every_query_uses_known_metric_names(path: Path) -> None:
    known = _known()
    used = {name for expr in _queries(_load(path)) for name in metric_names(expr)}
    assert used and used - known == set()


def test_promtool_refuses_a_broken_query(tmp_path: Path) -> None:
    file = tmp_path / "queries.yml"
    bad = "histogram_quantile(0.9, sum by (le) (rate(vllm:inter_token_latency_seconds_bucket[5m]))"
    file.write_text(yaml.safe_dump({"groups": [{"name": "x", "rules": [{"record": "a:b", "expr": bad}]}]}))
    assert run("check", "rules", str(file)).returncode != 0


@pytest.mark.parametrize(
    "expr,names",
    [
        (
            'histogram_quantile(0.9,sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket{a=~"b"}[5m])))',
            {"vllm:e2e_request_latency_seconds_bucket"},
        ),
        (
            'npu_chip_info_hbm_used_memory{host=~"a"} / (npu_chip_info_hbm_total_memory > 0) and on (b) up',
            {"npu_chip_info_hbm_used_memory", "npu_chip_info_hbm_total_memory", "up"},
        ),
        ("sum(rate(vllm:gpu_cache_usage_perc[1m])) by (engine)", {"vllm:gpu_cache_usage_perc"}),
    ],
)
def test_metric_names_finds_what_a_query_selects(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names
    assert "vllm:gpu_cache_usage_perc" not in _known()  # removed in vLLM 0.12: a query of it is refused
