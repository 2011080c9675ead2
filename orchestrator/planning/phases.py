"""The phases of an apply, in order, with the hosts each touches and what it will do there (planning only:
whether playbooks/<phase>.yml exists is the runner's business).

This is the one answer to "which hosts does a phase run on": the renderer writes each phase's hosts as the
inventory group phase_<name> (and each part as phase_<name>_<part>, render/groups.py), every play of
playbooks/<name>.yml targets those groups, and `orchestrator apply` limits each phase run to the same hosts
(tests/unit/test_phase_hosts.py checks that Ansible resolves every play to them)."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.planning.model import SitePlan
from orchestrator.planning.roles import container_hosts, hosts_with_role, monitored_hosts, role_host
from orchestrator.spec.site import SiteSpec

PHASE_NAMES: tuple[str, ...] = (
    "preflight",
    "drivers",
    "host",  # host_tuning + container_runtime
    "network",
    "image",
    "weights",
    "serve",
    "gateway",
    "monitoring",
)
"""Every phase, in apply order; each runs playbooks/<name>.yml."""


@dataclass(frozen=True)
class Phase:
    name: str
    playbook: str
    hosts: tuple[str, ...]
    summary: str
    parts: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """The hosts of the phase that some of its plays narrow to, by part name (group phase_<name>_<part>):
    e.g. the image is built on the build host only, then shipped to the NPU servers."""

    @property
    def skipped(self) -> bool:
        return not self.hosts


def _tuning_summary(spec: SiteSpec, plan: SitePlan) -> str:
    t = spec.tuning
    tp = plan.tuning
    parts = [
        f"governor {t.cpu_governor}" if t.cpu_governor else "",
        f"{len(tp.sysctls)} sysctls",
        f"debugfs {', '.join(f'{k}={v}' for k, v in tp.debugfs)}" if tp.debugfs else "",
        f"skip {', '.join(s.name for s in tp.skipped)}" if tp.skipped else "",
        f"THP {t.transparent_hugepages}" if t.transparent_hugepages else "",
        f"IRQs pinned {tp.irq_affinity}" if tp.irq_affinity else "",
        f"irqbalance {tp.irqbalance}" if tp.irqbalance else "",
        f"{t.hugepages.count} hugepages" if t.hugepages.count else "",
        f"modprobe options for {', '.join(sorted(t.rdma_modules))}" if t.rdma_modules else "",
    ]
    return ", ".join(x for x in parts if x) or "nothing to tune"


def _weights_check(spec: SiteSpec) -> str:
    """What the weights phase verifies (roles/model_weights: verified.yml with a manifest, else
    unverified.yml, which only staged weights reach: validation refuses a copy without one)."""
    if spec.model.source.manifest_sha256:
        return "every file checked against the manifest (sha256)"
    return "NOT verified (no model.source.manifest_sha256): only config.json is looked for"


def _monitoring_summary(spec: SiteSpec, mon: str | None) -> str:
    """The exporters the monitoring phase installs: npu-exporter only where the spec names its package."""
    exporters = (
        "node and NPU exporters"
        if spec.monitoring.npu_exporter
        else "node exporters only (no NPU metrics: monitoring.npu_exporter names no package)"
    )
    return exporters + (f", Prometheus on {mon}" if mon else "")


def serve_hosts(plan: SitePlan) -> tuple[str, ...]:
    """The servers that run `vllm serve`: every replica member, or every PD instance's servers."""
    if plan.pd is not None:
        return tuple(dict.fromkeys(s for inst in plan.pd.instances for s in inst.servers))
    return tuple(dict.fromkeys(m.server for r in plan.replicas for m in r.members))


def _gates(spec: SiteSpec, timeout: int) -> str:
    g = spec.rollout.gates
    return (
        f"gates: /health within {timeout} s, {g.smoke_prompts} smoke prompts, accuracy within "
        f"{g.accuracy_tolerance:.1%}"
    )


def _serve_summary(spec: SiteSpec, plan: SitePlan) -> str:
    return f"{_serve_layout(spec, plan)}; {_load(plan)}"


def _load(plan: SitePlan) -> str:
    load = plan.load
    if load is None:
        return "weights load: vLLM's default"
    value = f"--safetensors-load-strategy {load.strategy}" if load.strategy else "vLLM's default"
    return f"weights load: {value} ({load.why})"


def _serve_layout(spec: SiteSpec, plan: SitePlan) -> str:
    fail = "goes back to its previous release" if spec.rollout.auto_rollback else "is left stopped"
    if plan.pd is not None:
        pd = plan.pd
        timeout = max((i.startup_timeout_s for i in pd.instances), default=0)
        ranks = sum(len(i.ranks) for i in pd.instances)
        return (
            f"PD ({pd.connector}): {len(pd.prefill)} prefill and {len(pd.decode)} decode instance(s), "
            f"{ranks} DP rank containers; {_gates(spec, timeout)}; an instance that fails a gate {fail}"
        )
    first = plan.replicas[0]
    return (
        f"{len(plan.replicas)} replica(s); canary {spec.rollout.canary}, then batches of "
        f"{spec.rollout.batch_size}; {_gates(spec, first.startup_timeout_s)}; a replica that fails a gate "
        + fail
    )


def _workers(plan: SitePlan) -> str:
    if plan.pd is not None:
        p, d = plan.pd.worker_urls("prefill"), plan.pd.worker_urls("decode")
        return f"{len(p)} prefill and {len(d)} decode worker(s)"
    return f"{len(plan.replicas)} replica head(s)"


def plan_phases(spec: SiteSpec, plan: SitePlan) -> list[Phase]:
    npu = hosts_with_role(spec, "npu")
    everyone = tuple(s.name for s in spec.servers)
    sw = spec.software
    chips = sorted({h.chip for h in plan.hosts if h.chip})
    devices = sum(h.devices for h in plan.hosts if "npu" in h.roles)
    hccn = [d for h in plan.hosts for d in h.hccn]
    build = role_host(spec, "build") or ""
    gw = role_host(spec, "gateway")
    mon = role_host(spec, "monitoring")
    gateway_hosts = (gw,) if spec.gateway.enabled and gw else ()
    engines = container_hosts(spec)
    images = ", ".join(f"{i.tag} (SOC_VERSION {i.soc_version})" for i in plan.images)
    serve = _serve_summary(spec, plan)
    rows: list[tuple[str, tuple[str, ...], str]] = [
        (
            "preflight",
            everyone,
            f"SSH, OS {spec.os.distro} {spec.os.version}, "
            f"NPUs on PCI ({', '.join(chips)}: {devices} devices), disk, free ports",
        ),
        (
            "drivers",
            npu,
            f"HDK driver {sw.driver.version} + firmware {sw.firmware.version} "
            "(sha256-verified .run packages), reboot only when the installer asks",
        ),
        (
            "host",
            engines,
            f"tuning on {len(npu)} NPU server(s): {_tuning_summary(spec, plan)}; "
            f"Docker engine on {len(engines)} host(s)",
        ),
        (
            "network",
            tuple(h.name for h in plan.hosts if h.hccn),
            f"hccn_tool: {len(hccn)} NPU-NIC addresses, TLS "
            f"{'on' if spec.network.hccn and spec.network.hccn.tls else 'off'}; link and ping-matrix gate",
        ),
        (
            "image",
            tuple(dict.fromkeys((build, *npu))) if build else (),
            f"build {images} on {build}, ship by "
            f"{'registry' if spec.image.registry else 'tarball'}, pin by {spec.image.tag_policy}",
        ),
        (
            "weights",
            npu,
            f"{plan.model_name} ({plan.weights_gib:.0f} GiB) at "
            f"{spec.model.weights_path} ({spec.model.source.type}), {_weights_check(spec)}",
        ),
        ("serve", serve_hosts(plan), serve),
        (
            "gateway",
            gateway_hosts,
            f"vllm-router {spec.gateway.router.version} on port {spec.gateway.port}, "
            f"{spec.gateway.policy} over {_workers(plan)}",
        ),
        (
            "monitoring",
            monitored_hosts(spec),
            _monitoring_summary(spec, mon),
        ),
    ]
    monitored = monitored_hosts(spec)
    parts: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
        "host": (("tuning", npu),),  # host_tuning on the NPU servers; the container engine on every host
        "image": (("build", (build,) if build else ()), ("ship", npu if build else ())),
        "monitoring": (
            ("npu_exporter", tuple(h for h in monitored if h in npu)),
            ("prometheus", (mon,) if mon and monitored else ()),  # Prometheus and Grafana provisioning
        ),
    }
    return [Phase(name, f"{name}.yml", hosts, summary, parts.get(name, ())) for name, hosts, summary in rows]
