"""roles/prometheus/templates/prometheus.yml.j2 rendered by Ansible's own templating for every example site,
then checked by Prometheus's promtool (`promtool check config` also loads the alert rules it names).

The template is rendered as the template action of ansible-core renders it (a trusted template, the action's
default trim_blocks, no backslash escaping) from the committed group_vars/all.yml of each example (another
test keeps those equal to what render writes) and the role's defaults. The targets are then compared with
the site itself: its servers' addresses, roles and the spec's ports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.pipeline import validate_file
from orchestrator.planning.phases import plan_phases
from orchestrator.render.vars.monitoring import JOBS
from tests.helpers import EXAMPLES
from tests.prometheus_config import RULES, site_vars, write_config
from tests.promtool import run

# the examples that monitor (monitoring is off on the openEuler ones: it needs a Debian-family OS)
SITES = sorted(
    p.parent.name
    for p in EXAMPLES.glob("*/site.yaml")
    if (yaml.safe_load(p.read_text(encoding="utf-8")).get("monitoring") or {}).get("enabled", True)
)


def _targets(config: dict[str, Any], job: str) -> dict[str, dict[str, str]]:
    """address -> labels of every target of the job (empty when the job is not in the config)."""
    out: dict[str, dict[str, str]] = {}
    for sc in config["scrape_configs"]:
        if sc["job_name"] == job:
            for static in sc["static_configs"]:
                for address in static["targets"]:
                    out[address] = static["labels"]
    return out


@pytest.mark.parametrize("site", SITES)
def test_promtool_accepts_the_config_of_every_example(tmp_path: Path, site: str) -> None:
    config = write_config(tmp_path, site_vars(site))
    out = run("check", "config", str(config))
    assert out.returncode == 0, out.stdout + config.read_text()
    assert "is valid prometheus config file syntax" in out.stdout
    groups = yaml.safe_load((RULES / "ascend-fleet.rules.yml").read_text(encoding="utf-8"))["groups"]
    assert f"SUCCESS: {sum(len(g['rules']) for g in groups)} rules found" in out.stdout


@pytest.mark.parametrize("site", SITES)
def test_the_targets_are_the_sites_servers(tmp_path: Path, site: str) -> None:
    result = validate_file(EXAMPLES / site / "site.yaml")
    spec, plan = result.spec, result.plan
    assert spec is not None and plan is not None
    config = yaml.safe_load(write_config(tmp_path, site_vars(site)).read_text())
    addr = {s.name: str(s.address) for s in spec.servers}
    mon = spec.monitoring
    npu = [s.name for s in spec.servers if "npu" in s.roles]
    phase = next(p for p in plan_phases(spec, plan) if p.name == "monitoring")

    assert config["global"]["scrape_interval"] == f"{mon.scrape_interval_s}s"
    assert {sc["job_name"] for sc in config["scrape_configs"]} <= set(JOBS)
    # npu-exporter only where the spec names its package (monitoring.npu_exporter; the examples do not)
    assert _targets(config, "npu-exporter") == (
        {f"{addr[h]}:{mon.npu_exporter_port}": {"host": h} for h in npu} if mon.npu_exporter else {}
    )
    assert _targets(config, "node") == {
        f"{addr[h]}:{mon.node_exporter_port}": {"host": h} for h in phase.hosts
    }
    assert _targets(config, "vllm") == {
        f"{addr[r.head.server]}:{r.port}": {"host": r.head.server, "replica": r.name} for r in plan.replicas
    }
    router = _targets(config, "vllm-router")
    if spec.gateway.enabled:
        gw = spec.gateway.host or next(s.name for s in spec.servers if "gateway" in s.roles)
        assert router == {f"{addr[gw]}:{spec.gateway.prometheus_port}": {"host": gw}}
    else:
        assert router == {}
    jobs = {sc["job_name"]: sc for sc in config["scrape_configs"]}
    if "npu-exporter" in jobs:
        assert (
            jobs["npu-exporter"]["honor_timestamps"] is False
        )  # npu-exporter stamps samples with collect times
    assert jobs["node"]["honor_labels"] is True  # the drift textfile's host label is the checked server


def test_the_fleet_example_scrapes_every_kind_of_target(tmp_path: Path) -> None:
    """a2-fleet-gateway has a gateway and a monitoring host: every job is in its config (npu-exporter once
    the spec names its package)."""
    config = yaml.safe_load(write_config(tmp_path, site_vars("a2-fleet-gateway")).read_text())
    assert [sc["job_name"] for sc in config["scrape_configs"]] == [j for j in JOBS if j != "npu-exporter"]
    variables = site_vars("a2-fleet-gateway")
    npu_job = {
        **variables["monitoring_scrape_jobs"][0],
        "targets": [{"address": "10.50.0.11:8082", "labels": {"host": "a2-01"}}],
    }
    variables["monitoring_scrape_jobs"] = [npu_job, *variables["monitoring_scrape_jobs"][1:]]
    (tmp_path / "with-package").mkdir()
    config = yaml.safe_load(write_config(tmp_path / "with-package", variables).read_text())
    assert [sc["job_name"] for sc in config["scrape_configs"]] == list(JOBS)
    assert config["scrape_configs"][0]["honor_timestamps"] is False
    assert _targets(config, "vllm-router") == {"10.50.0.5:29000": {"host": "edge-01"}}
    assert _targets(config, "prometheus") == {"10.50.0.5:9090": {"host": "edge-01"}}


def test_alertmanagers_and_short_intervals_stay_valid(tmp_path: Path) -> None:
    variables = site_vars(
        "a2-single-distill",
        prometheus_alertmanagers=["10.0.0.9:9093"],
        monitoring_scrape_interval_s=5,
        monitoring_scrape_timeout_s=5,
    )
    config = write_config(tmp_path, variables)
    out = run("check", "config", str(config))
    assert out.returncode == 0, out.stdout
    data = yaml.safe_load(config.read_text())
    assert data["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] == ["10.0.0.9:9093"]


def test_promtool_refuses_a_timeout_longer_than_the_interval(tmp_path: Path) -> None:
    """The check is real: the scrape timeout render derives (at most the interval) matters."""
    variables = site_vars("a2-single-distill", monitoring_scrape_interval_s=5, monitoring_scrape_timeout_s=10)
    out = run("check", "config", str(write_config(tmp_path, variables)))
    assert out.returncode != 0
    assert "scrape timeout greater than scrape interval" in out.stdout


def test_every_job_the_rules_name_is_a_scrape_job() -> None:
    text = (RULES / "ascend-fleet.rules.yml").read_text(encoding="utf-8")
    named = {part.split('"')[1] for part in text.split("job=")[1:]}
    assert named and named <= set(JOBS)
