"""The monitoring_* variables render writes (orchestrator/render/monitoring_vars.py) for specs the examples
do not cover: monitoring disabled, a short scrape interval, no gateway."""

from __future__ import annotations

from typing import Any

from orchestrator.render.inventory import inventory_files
from orchestrator.render.vars.monitoring import JOBS, monitoring_vars
from tests.helpers import load_example, validate_data


def _vars(data: dict[str, Any]) -> dict[str, Any]:
    result = validate_data(data)
    assert result.spec is not None and result.plan is not None, result.errors
    return monitoring_vars(result.spec, result.plan)


def test_disabled_monitoring_scrapes_nothing() -> None:
    data = load_example("a2-fleet-gateway")
    data["monitoring"] = {"enabled": False}
    out = _vars(data)
    assert out["monitoring_scrape_jobs"] == [] and out["monitoring_prometheus_url"] is None
    assert out["monitoring_prometheus_url"] is None


def test_the_scrape_timeout_never_exceeds_the_interval() -> None:
    data = load_example("a2-fleet-gateway")
    data["monitoring"] = {"scrape_interval_s": 4}
    assert _vars(data)["monitoring_scrape_timeout_s"] == 4
    data["monitoring"] = {"scrape_interval_s": 60}
    assert _vars(data)["monitoring_scrape_timeout_s"] == 10


def test_without_a_gateway_the_router_job_has_no_target() -> None:
    data = load_example("a2-fleet-gateway")
    data["gateway"] = {"enabled": False}
    jobs = {j["name"]: j["targets"] for j in _vars(data)["monitoring_scrape_jobs"]}
    assert list(jobs) == list(JOBS)
    assert jobs["vllm-router"] == []
    assert jobs["prometheus"] == [{"address": "10.50.0.5:9090", "labels": {"host": "edge-01"}}]


def test_ports_come_from_the_spec() -> None:
    data = load_example("a2-fleet-gateway")
    data["monitoring"] = {
        "npu_exporter_port": 18082,
        "node_exporter_port": 19100,
        "npu_exporter": {"version": "7.1.0", "path": "/srv/npu-exporter.zip", "sha256": "0" * 64},
    }
    data["gateway"]["prometheus_port"] = 29100
    jobs = {j["name"]: j["targets"] for j in _vars(data)["monitoring_scrape_jobs"]}
    assert jobs["npu-exporter"][0] == {"address": "10.50.0.11:18082", "labels": {"host": "a2-01"}}
    assert {t["address"] for t in jobs["node"]} == {
        "10.50.0.11:19100", "10.50.0.12:19100", "10.50.0.13:19100", "10.50.0.14:19100", "10.50.0.5:19100"
    }  # fmt: skip
    assert jobs["vllm-router"] == [{"address": "10.50.0.5:29100", "labels": {"host": "edge-01"}}]


def test_without_an_npu_exporter_package_its_job_has_no_target() -> None:
    data = load_example("a2-fleet-gateway")
    jobs = {j["name"]: j["targets"] for j in _vars(data)["monitoring_scrape_jobs"]}
    assert jobs["npu-exporter"] == [] and len(jobs["node"]) == 5
    result = validate_data(data)
    assert result.spec is not None and result.plan is not None
    assert (
        inventory_files(result.spec, result.plan, "0" * 64)["group_vars/all.yml"][
            "monitoring_npu_exporter_package"
        ]
        is None
    )
    data["monitoring"] = {"npu_exporter": {"version": "7.1.0", "path": "/srv/x.zip", "sha256": "a" * 64}}
    result = validate_data(data)
    assert result.spec is not None and result.plan is not None
    assert inventory_files(result.spec, result.plan, "0" * 64)["group_vars/all.yml"][
        "monitoring_npu_exporter_package"
    ] == {
        "version": "7.1.0",
        "source": "controller",
        "location": "/srv/x.zip",
        "filename": "x.zip",
        "sha256": "a" * 64,
    }
