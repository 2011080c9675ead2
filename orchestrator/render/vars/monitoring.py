"""The monitoring phase's variables (group_vars/all.yml): what Prometheus on the monitoring host scrapes.

`monitoring_scrape_jobs` is the whole target list, one entry per scrape job, which
roles/prometheus/templates/prometheus.yml.j2 writes as it is (docs/monitoring.md):

- npu-exporter: every NPU server at its management address and monitoring.npu_exporter_port (none when
  the spec names no monitoring.npu_exporter package), with
  `honor_timestamps: false` - npu-exporter stamps every sample with the time its metric group was collected
  (up to 60 s old for HBM and network, a day for node_base_info), which Prometheus would store late, reject
  as out of bounds or keep without staleness markers (MindCluster collector/metrics/common_utils.go);
- node: node_exporter (Debian's prometheus-node-exporter) on every host of the monitoring phase, with
  `honor_labels: true` so the drift textfile's own `host` label (the checked server) wins over the target's;
- vllm: every replica head's /metrics (its API port; vLLM's --api-key guards only /v1 paths, so no secret is
  needed), labelled with the replica; on a PD site every DP rank's (each its own API server), labelled with
  its instance (replica), pd_role (prefill|decode) and dp_rank;
- vllm-router: the gateway's metrics listener (gateway.prometheus_port on the gateway's address: the gateway
  role passes --prometheus-host <address>, the router's own default is 127.0.0.1) when the gateway is enabled;
- prometheus: the server itself.

Every target carries a `host` label (the inventory name), which the alert rules
(roles/prometheus/files/rules/) print and join on; the job names below are the ones those rules use.
"""

from __future__ import annotations

from typing import Any

from orchestrator.planning.model import SitePlan
from orchestrator.render.vars.common import package
from orchestrator.spec.site import SiteSpec

JOB_NPU_EXPORTER = "npu-exporter"
JOB_NODE = "node"
JOB_VLLM = "vllm"
JOB_ROUTER = "vllm-router"
JOB_PROMETHEUS = "prometheus"
JOBS = (JOB_NPU_EXPORTER, JOB_NODE, JOB_VLLM, JOB_ROUTER, JOB_PROMETHEUS)
"""Scrape job names, defined only here: the template takes them from the rendered jobs; the rules use them."""

DEFAULT_SCRAPE_TIMEOUT_S = 10  # Prometheus's default; it may not exceed the scrape interval


def _target(address: str, port: int, host: str, **labels: str) -> dict[str, Any]:
    return {"address": f"{address}:{port}", "labels": {"host": host, **labels}}


def _job(name: str, targets: list[dict[str, Any]], **settings: bool) -> dict[str, Any]:
    return {
        "name": name,
        "metrics_path": "/metrics",
        "honor_timestamps": settings.get("honor_timestamps", True),
        "honor_labels": settings.get("honor_labels", False),
        "targets": targets,
    }


def scrape_jobs(spec: SiteSpec, plan: SitePlan) -> list[dict[str, Any]]:
    """One entry per job name in JOBS, in that order; a job of this site with no target has an empty list."""
    mon = spec.monitoring
    address = {h.name: h.address for h in plan.hosts}
    npu = plan.roles.npu
    prometheus_host = plan.roles.monitoring
    gateway = plan.roles.gateway
    return [
        _job(
            JOB_NPU_EXPORTER,
            [_target(address[h], mon.npu_exporter_port, h) for h in npu] if mon.npu_exporter else [],
            honor_timestamps=False,
        ),
        _job(
            JOB_NODE,
            [_target(address[h], mon.node_exporter_port, h) for h in plan.roles.monitored],
            honor_labels=True,
        ),
        _job(
            JOB_VLLM,
            [_target(r.head.address, r.port, r.head.server, replica=r.name) for r in plan.replicas]
            + [
                _target(k.address, k.port, k.server, replica=i.name, pd_role=i.role, dp_rank=str(k.dp_rank))
                for i in (plan.pd.instances if plan.pd is not None else ())
                for k in i.ranks
            ],
        ),
        _job(
            JOB_ROUTER,
            [_target(address[gateway], spec.gateway.prometheus_port, gateway)] if gateway else [],
        ),
        _job(
            JOB_PROMETHEUS,
            [_target(address[prometheus_host], mon.prometheus_port, prometheus_host)]
            if prometheus_host
            else [],
        ),
    ]


def monitoring_vars(spec: SiteSpec, plan: SitePlan) -> dict[str, Any]:
    mon = spec.monitoring
    host = plan.roles.monitoring  # None when monitoring is disabled
    address = plan.host(host).address if host else None
    return {
        "monitoring_enabled": mon.enabled,
        "monitoring_prometheus_url": f"http://{address}:{mon.prometheus_port}" if address else None,
        "monitoring_prometheus_port": mon.prometheus_port,
        "monitoring_node_exporter_port": mon.node_exporter_port,
        "monitoring_npu_exporter_port": mon.npu_exporter_port,
        "monitoring_scrape_interval_s": mon.scrape_interval_s,
        "monitoring_scrape_timeout_s": min(DEFAULT_SCRAPE_TIMEOUT_S, mon.scrape_interval_s),
        "monitoring_retention_days": mon.retention_days,
        "monitoring_grafana_enabled": mon.enabled and mon.grafana.enabled,
        "monitoring_scrape_jobs": scrape_jobs(spec, plan) if mon.enabled else [],
        "monitoring_npu_exporter_package": package(mon.npu_exporter) if mon.npu_exporter else None,
    }
