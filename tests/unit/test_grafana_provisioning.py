"""Role grafana_dashboards' provisioning files, rendered by Ansible's own templating (the filters the role
uses, to_nice_yaml included) from a rendered example inventory's values, parse as Grafana's provisioning
YAML (https://grafana.com/docs/grafana/latest/administration/provisioning/): apiVersion 1, one Prometheus
data source of uid "prometheus" (the uid every dashboard's panels name) at the site's Prometheus URL, and a
file provider whose path is the folder the role copies every dashboard of files/ to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from tests.helpers import ROOT

ROLE = ROOT / "roles" / "grafana_dashboards"
SITE_VARS = {
    "orchestrator_site": "lab",
    "monitoring_prometheus_url": "http://10.0.0.9:9090",
    "monitoring_scrape_interval_s": 15,
    "ansible_managed": "Ansible managed",
}


def _render(name: str) -> Any:
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text(encoding="utf-8"))
    templar = Templar(loader=DataLoader(), variables={**defaults, **SITE_VARS})
    text = templar.template(trust_as_template((ROLE / "templates" / name).read_text(encoding="utf-8")))
    assert isinstance(text, str)
    return yaml.safe_load(text)


def test_the_datasource_is_the_sites_prometheus_with_the_dashboards_uid() -> None:
    doc = _render("datasource.yml.j2")
    assert doc["apiVersion"] == 1
    (ds,) = doc["datasources"]
    assert (ds["type"], ds["uid"], ds["url"], ds["access"]) == (
        "prometheus", "prometheus", "http://10.0.0.9:9090", "proxy"
    )  # fmt: skip
    assert ds["jsonData"] == {"timeInterval": "15s"}
    for board in sorted((ROLE / "files").glob("*.json")):
        uids = {
            p["datasource"]["uid"]
            for p in json.loads(board.read_text(encoding="utf-8"))["panels"]
            if isinstance(p.get("datasource"), dict)
        }
        assert uids == {ds["uid"]}, board.name


def test_the_dashboard_provider_reads_the_folder_the_dashboards_go_to() -> None:
    doc = _render("dashboards.yml.j2")
    assert doc["apiVersion"] == 1
    (provider,) = doc["providers"]
    assert provider["type"] == "file" and provider["folder"] == "Ascend"
    tasks = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text(encoding="utf-8"))
    (copy,) = [t for t in tasks if t["name"] == "Grafana | dashboards"]
    assert copy["ansible.builtin.copy"]["dest"].startswith("{{ grafana_dashboards_dir }}/")
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards/ascend"
    assert sorted(copy["loop"]) == sorted(p.name for p in (ROLE / "files").glob("*.json"))


def test_rendering_needs_the_rendered_prometheus_url() -> None:
    path = ROLE / "meta" / "argument_specs.yml"
    options = yaml.safe_load(path.read_text(encoding="utf-8"))["argument_specs"]["main"]["options"]
    assert options["monitoring_prometheus_url"]["required"] is True
    assert Path(ROLE / "templates" / "datasource.yml.j2").read_text().count("monitoring_prometheus_url") == 1
