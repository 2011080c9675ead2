"""The phases of an apply, in order, with the hosts each touches and what it will do there."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.planning.model import SitePlan
from orchestrator.planning.roles import hosts_with_role, role_host
from orchestrator.planning.tuning import tuning_plan
from orchestrator.spec.site import SiteSpec


@dataclass(frozen=True)
class Phase:
    name: str
    playbook: str
    hosts: tuple[str, ...]
    summary: str

    @property
    def skipped(self) -> bool:
        return not self.hosts


def plan_phases(spec: SiteSpec, plan: SitePlan) -> list[Phase]:
    npu = hosts_with_role(spec, "npu")
    everyone = tuple(s.name for s in spec.servers)
    sw, t = spec.software, spec.tuning
    chips = sorted({h.chip for h in plan.hosts if h.chip})
    devices = sum(h.devices for h in plan.hosts if "npu" in h.roles)
    hccn = [d for h in plan.hosts for d in h.hccn]
    build = role_host(spec, "build") or ""
    gw = role_host(spec, "gateway")
    mon = role_host(spec, "monitoring")
    tp = plan.tuning or tuning_plan(spec)
    tuning = [
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
    images = ", ".join(f"{i.tag} (SOC_VERSION {i.soc_version})" for i in plan.images)
    first = plan.replicas[0]
    serve = (
        f"{len(plan.replicas)} replica(s); canary {spec.rollout.canary}, then batches of "
        f"{spec.rollout.batch_size}; gates: /health within {first.startup_timeout_s} s, "
        f"{spec.rollout.gates.smoke_prompts} smoke prompts, accuracy within "
        f"{spec.rollout.gates.accuracy_tolerance:.1%}; "
        f"rollback {'on' if spec.rollout.auto_rollback else 'off'}"
    )
    return [
        Phase(
            "preflight",
            "preflight.yml",
            everyone,
            f"SSH, OS {spec.os.distro} {spec.os.version}, "
            f"NPUs on PCI ({', '.join(chips)}: {devices} devices), disk, free ports",
        ),
        Phase(
            "drivers",
            "drivers.yml",
            npu,
            f"HDK driver {sw.driver.version} + firmware {sw.firmware.version} "
            "(sha256-verified .run packages), reboot only when the installer asks",
        ),
        Phase("host", "host.yml", npu, ", ".join(x for x in tuning if x) or "nothing to tune"),
        Phase(
            "network",
            "network.yml",
            tuple(h.name for h in plan.hosts if h.hccn),
            f"hccn_tool: {len(hccn)} NPU-NIC addresses, TLS "
            f"{'on' if spec.network.hccn and spec.network.hccn.tls else 'off'}; link and ping-matrix gate",
        ),
        Phase(
            "runtime",
            "runtime.yml",
            tuple(dict.fromkeys((*npu, build))),
            "Docker engine with NPU device access",
        ),
        Phase(
            "image",
            "image.yml",
            (build,) if build else (),
            f"build {images} on {build}, ship by "
            f"{'registry' if spec.image.registry else 'tarball'}, pin by {spec.image.tag_policy}",
        ),
        Phase(
            "weights",
            "weights.yml",
            npu,
            f"{plan.model_name} ({plan.weights_gib:.0f} GiB) at "
            f"{spec.model.weights_path} ({spec.model.source.type}), checksums verified",
        ),
        Phase("serve", "serve.yml", tuple(m.server for r in plan.replicas for m in r.members), serve),
        Phase(
            "gateway",
            "gateway.yml",
            (gw,) if spec.gateway.enabled and gw else (),
            f"port {spec.gateway.port}, {spec.gateway.policy} over healthy replicas",
        ),
        Phase(
            "monitoring",
            "monitoring.yml",
            tuple(dict.fromkeys((*npu, *([mon] if mon else ())))) if spec.monitoring.enabled else (),
            "node and NPU exporters" + (f", Prometheus on {mon}" if mon else ""),
        ),
    ]
