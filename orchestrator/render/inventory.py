"""Turn a validated spec and its plan into Ansible inventory content (plain dicts, deterministic order).

Layout written by the renderer:
  hosts.yml               groups only (npu, build, gateway, monitoring, replica_<name>, rollout_<group>)
  group_vars/all.yml      site-wide settings (SSH, versions, model, rollout, monitoring, drift)
  group_vars/npu.yml      host-layer settings shared by NPU servers (packages, tuning, HCCN options)
  host_vars/<host>.yml    everything per host: address, chip, HCCN addresses, serving instances (a Ray
                          replica's members also carry `ray`: GCS address, NPUs, `ray start` argv)
Secrets stay references ('env:NAME' / 'file:PATH'); roles resolve them on the controller at run time.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from orchestrator.catalog import get_chip
from orchestrator.planning import preflight
from orchestrator.planning.hccn_peers import HccnView, hccn_views
from orchestrator.planning.model import HostPlan, MemberPlan, ReplicaPlan, SitePlan
from orchestrator.planning.tuning import split_sysctls, tuning_plan
from orchestrator.render.ascend_runtime import ascend_runtime_vars
from orchestrator.render.drivers_vars import drivers_vars
from orchestrator.render.gateway_vars import gateway_vars
from orchestrator.render.groups import inventory_groups
from orchestrator.render.image_vars import image_vars
from orchestrator.render.monitoring_vars import monitoring_vars
from orchestrator.render.rollout_vars import rollout_vars, worker_url
from orchestrator.render.weights_vars import weights_vars
from orchestrator.spec.hardware import Server
from orchestrator.spec.site import SiteSpec
from orchestrator.spec.software import PackageSource

Files = dict[str, dict[str, Any]]

INVENTORY_VERSION = 1
"""The layout of the rendered inventory; playbooks/boilerplate.yml refuses any other (bump both together)."""


def _package(pkg: PackageSource) -> dict[str, Any]:
    location = pkg.path if pkg.path is not None else str(pkg.url)
    return {
        "version": pkg.version,
        "source": "controller" if pkg.path is not None else "url",
        "location": location,
        "filename": PurePosixPath(
            pkg.path if pkg.path is not None else str(pkg.url.path if pkg.url else "")
        ).name,
        "sha256": pkg.sha256,
    }


def _hdk_package(pkg: PackageSource) -> dict[str, Any]:
    """A driver or firmware package, its version as the host prints it (the portal's 25.0.RC1 is 25.0.rc1
    in version.info and npu-smi)."""
    return {**_package(pkg), "version": pkg.version.lower()}


def _all_vars(spec: SiteSpec, plan: SitePlan, spec_sha256: str) -> dict[str, Any]:
    ssh = spec.ssh
    out: dict[str, Any] = {
        "orchestrator_site": spec.site,
        "orchestrator_spec_sha256": spec_sha256,
        "orchestrator_inventory_version": INVENTORY_VERSION,
        "ansible_user": ssh.user,
        "ansible_become": ssh.become or ssh.user != "root",
        "ansible_ssh_host_key_checking": ssh.host_key_checking,
        "ansible_python_interpreter": "auto_silent",
    }
    if ssh.key_file:
        out["ansible_ssh_private_key_file"] = ssh.key_file
    if ssh.known_hosts_file:
        out["ansible_ssh_common_args"] = f"-o UserKnownHostsFile={ssh.known_hosts_file}"
    st = plan.stack
    out.update(
        {
            "orchestrator_stack": {
                "vllm_ascend": st.vllm_ascend,
                "vllm": st.vllm,
                "cann": st.cann,
                "torch": st.torch,
                "torch_npu": st.torch_npu,
                "triton_ascend": st.triton_ascend,
                "python": st.python,
            },
            "vllm_image_name": spec.image.name,
            "vllm_image_tag_policy": spec.image.tag_policy,
            "vllm_image_registry": None
            if spec.image.registry is None
            else {
                "url": spec.image.registry.url,
                "username": spec.image.registry.username,
                "password_ref": spec.image.registry.password,
                "insecure": spec.image.registry.insecure,
            },
            "vllm_image_builds": [
                {
                    "chip": i.chip,
                    "soc_version": i.soc_version,
                    "cann": i.cann,
                    "os_family": i.os_family,
                    "base_image": i.base_image,
                    "upstream_image": i.upstream_image,
                    "tag": i.tag,
                    "build_args": dict(i.build_args),
                }
                for i in plan.images
            ],
            "model_weights_name": plan.model_name,
            "model_weights_path": spec.model.weights_path,
            "model_weights_source": spec.model.source.type,
            "model_weights_location": spec.model.source.location,
            "model_weights_manifest_sha256": spec.model.source.manifest_sha256,
            "model_weights_size_gib": round(plan.weights_gib, 1),
            "vllm_serve_served_name": plan.served_name,
            "vllm_serve_api_key_ref": spec.serving.api_key,
            "vllm_serve_quantization": plan.quantization,
            "vllm_serve_dtype": plan.dtype,
            "vllm_serve_health_interval_s": spec.rollout.gates.health_interval_s,
            "rollout_canary": spec.rollout.canary,
            "rollout_batch_size": spec.rollout.batch_size,
            "rollout_max_fail_percentage": spec.rollout.max_fail_percentage,
            "rollout_min_available": spec.rollout.min_available,
            "rollout_auto_rollback": spec.rollout.auto_rollback,
            "rollout_smoke_prompts": spec.rollout.gates.smoke_prompts,
            "rollout_accuracy_tolerance": spec.rollout.gates.accuracy_tolerance,
            "rollout_max_error_rate": spec.rollout.gates.max_error_rate,
            "rollout_replicas": [_replica_summary(r) for r in plan.replicas],
            **monitoring_vars(spec, plan),
            "monitoring_npu_exporter_package": (
                _package(spec.monitoring.npu_exporter) if spec.monitoring.npu_exporter else None
            ),
            "drift_enabled": spec.drift.enabled,
            "drift_schedule": spec.drift.schedule,
            "drift_fail_on_drift": spec.drift.fail_on_drift,
            "drift_outputs": [{"type": o.type, "path": o.path, "url_ref": o.url} for o in spec.drift.outputs],
        }
    )
    out.update(weights_vars(spec))
    out.update(rollout_vars(spec, plan))
    out.update(_preflight_vars(spec))
    out.update(image_vars(spec))
    out.update(gateway_vars(spec, plan))
    return out


# The distribution's own Docker engine and Python Docker SDK (the SDK is what community.docker modules
# use), by spec os.distro. Sources: packages.ubuntu.com/jammy/docker.io + python3-docker (universe);
# packages.debian.org/bookworm/docker.io + python3-docker; openEuler 22.03/24.03 "everything" repo:
# docker (docker-engine, Provides: docker) + python3-docker. kylin: inferred from openEuler (V10 SP).
CONTAINER_RUNTIME_PACKAGES = {
    "ubuntu": ["docker.io", "python3-docker"],
    "debian": ["docker.io", "python3-docker"],
    "openeuler": ["docker", "python3-docker"],
    "kylin": ["docker", "python3-docker"],
}


def _container_runtime_vars(spec: SiteSpec) -> dict[str, Any]:
    """The container engine (role container_runtime, hosts of the group container_runtime)."""
    cr = spec.software.container_runtime
    daemon: dict[str, Any] = {
        "log-driver": "json-file",
        "log-opts": {"max-size": cr.log_max_size, "max-file": str(cr.log_max_files)},
        "live-restore": cr.live_restore,
    }
    if cr.data_root:
        daemon["data-root"] = cr.data_root
    return {
        "container_runtime_packages": list(CONTAINER_RUNTIME_PACKAGES[spec.os.distro]),
        "container_runtime_daemon_config": daemon,
    }


def _preflight_vars(spec: SiteSpec) -> dict[str, Any]:
    """What every server must be (planning.preflight): OS, architecture, kernel policy, time sync."""
    return {"preflight_os": preflight.preflight_site(spec)}


def _preflight_host_vars(spec: SiteSpec, plan: SitePlan, host: HostPlan) -> dict[str, Any]:
    """Per server: its architecture, the NPUs lspci must show and the free disk each path needs."""
    npu = None
    if host.chip is not None and host.profile is not None:
        npu = {
            "chip": host.chip,
            "arch": spec.profiles[host.profile].arch,
            "pci_vendor_id": "19e5",
            "pci_device_id": get_chip(host.chip).pci_device_id,
            "pci_functions": preflight.pci_functions(spec, host),
        }
    return {
        "preflight_npu": npu,
        "preflight_disk": [
            {
                "path": d.path,
                "purpose": d.purpose,
                "min_free_gib": d.min_free_gib,
                "counts_existing": d.counts_existing,
            }
            for d in preflight.disk_needs(spec, plan, host)
        ],
    }


def _replica_summary(rep: ReplicaPlan) -> dict[str, Any]:
    return {
        "name": rep.name,
        "group": rep.group,
        "head": rep.head.server,
        "endpoint": rep.endpoint,
        "worker_url": worker_url(rep),
        "members": [m.server for m in rep.members],
        "mode": rep.mode,
        "port": rep.port,
        "startup_timeout_s": rep.startup_timeout_s,
    }


def _host_tuning_vars(spec: SiteSpec, plan: SitePlan) -> dict[str, Any]:
    """Everything role host_tuning reads (roles/host_tuning/meta/argument_specs.yml): the spec's tuning as
    applied on this site's kernel (planning.tuning: sysctls split into sysctl / debugfs / skipped)."""
    t = spec.tuning
    tp = plan.tuning or tuning_plan(spec)
    return {
        "host_tuning_cpu_governor": t.cpu_governor,
        "host_tuning_kernel": tp.kernel or None,
        "host_tuning_sysctls": dict(tp.sysctls),
        "host_tuning_debugfs": dict(tp.debugfs),
        "host_tuning_skipped": [{"name": s.name, "reason": s.reason} for s in tp.skipped],
        "host_tuning_irqbalance": tp.irqbalance,
        "host_tuning_irq_affinity": tp.irq_affinity,
        "host_tuning_transparent_hugepages": t.transparent_hugepages,
        "host_tuning_hugepages_size_kb": t.hugepages.size_kb,
        "host_tuning_hugepages_count": t.hugepages.count,
        "host_tuning_rdma_modules": {m: dict(sorted(o.items())) for m, o in sorted(t.rdma_modules.items())},
        "host_tuning_memlock": None if t.memlock is None else str(t.memlock),
    }


def _npu_vars(spec: SiteSpec, plan: SitePlan) -> dict[str, Any]:
    sw = spec.software
    hccn = spec.network.hccn
    return {
        "npu_driver_package": _hdk_package(sw.driver),
        "npu_firmware_package": _hdk_package(sw.firmware),
        "npu_cann_package": _package(sw.cann) if sw.cann else None,
        **drivers_vars(spec),
        **_host_tuning_vars(spec, plan),
        **ascend_runtime_vars(
            spec, _container_runtime_vars(spec)["container_runtime_daemon_config"], _package
        ),
        "hccn_network_tls": hccn.tls if hccn else False,
        "hccn_network_mtu": hccn.mtu if hccn else None,
    }


def _hccn_network_vars(view: HccnView) -> dict[str, Any]:
    """What the hccn_network role checks and writes on an NPU host beyond its own NIC addresses: the peer
    NICs its gate pings and the HCCL rank tables of its multi-node replicas (planning.hccn_peers)."""
    return {
        "hccn_network_peers": [
            {"server": p.server, "index": p.index, "address": p.address} for p in view.peers
        ],
        "hccn_network_rank_tables": [{"replica": n, "table": t} for n, t in view.rank_tables.items()],
    }


def _ray(rep: ReplicaPlan, m: MemberPlan) -> dict[str, Any]:
    """What a Ray member runs besides (head) or instead of (worker) `vllm serve` (docs/ray.md)."""
    return {
        "gcs_address": rep.ray_address,
        "node_ip_address": m.ray_node_ip,
        "npus": len(m.devices),
        "cluster_npus": rep.tp * rep.pp,
        "start_args": list(m.ray_start_args),
    }


def _instance(spec: SiteSpec, plan: SitePlan, rep: ReplicaPlan, m: MemberPlan, chip: str) -> dict[str, Any]:
    image = plan.image_for(chip)
    out = {
        "replica": rep.name,
        "group": rep.group,
        "role": m.role,
        "mode": rep.mode,
        "node_rank": m.node_rank,
        "container_name": f"vllm-{rep.name}",
        "image": image.tag,
        "port": rep.port if m.role == "head" else None,
        "head_address": rep.head.address,
        "devices": list(m.devices),
        "visible_devices": m.visible_devices,
        "dp_size_local": m.dp_size_local,
        "dp_start_rank": m.dp_start_rank,
        "args": list(m.args),
        "env": dict(m.env),
        "startup_timeout_s": rep.startup_timeout_s,
    }
    if rep.mode == "ray":
        out["ray"] = _ray(rep, m)
    return out


def _host_vars(
    spec: SiteSpec,
    plan: SitePlan,
    host: HostPlan,
    srv: Server,
    members: list[tuple[ReplicaPlan, MemberPlan]],
) -> dict[str, Any]:
    """srv: the host's spec entry; members: its replica memberships in plan order (looked up once)."""
    out: dict[str, Any] = {
        "ansible_host": host.address,
        "ansible_port": host.ssh_port,
        "orchestrator_roles": list(host.roles),
    }
    if srv.labels:
        out["orchestrator_labels"] = dict(sorted(srv.labels.items()))
    if host.chip is not None:
        image = plan.image_for(host.chip) if any(i.chip == host.chip for i in plan.images) else None
        out.update(
            {
                "npu_profile": host.profile,
                "npu_chip": host.chip,
                "npu_device_count": host.devices,
                "npu_hbm_gib": host.hbm_gib,
                "npu_soc_version": image.soc_version if image else None,
                "hccn_network_devices": [
                    {
                        "index": d.index,
                        "address": d.address,
                        "netmask": d.netmask,
                        "gateway": d.gateway,
                        "netdetect": d.netdetect,
                    }
                    for d in host.hccn
                ],
            }
        )
        ov = srv.overrides
        if ov.cpu_governor:
            out["host_tuning_cpu_governor"] = ov.cpu_governor
        if ov.sysctls:
            kernel = plan.tuning.kernel if plan.tuning else ""
            sysctls, debugfs, skipped = split_sysctls({**spec.tuning.sysctls, **ov.sysctls}, kernel)
            out["host_tuning_sysctls"] = sysctls
            out["host_tuning_debugfs"] = debugfs
            out["host_tuning_skipped"] = [{"name": s.name, "reason": s.reason} for s in skipped]
    out.update(_preflight_host_vars(spec, plan, host))
    out["orchestrator_ports"] = [{"port": p, "service": s} for p, s in host.ports]
    out["vllm_serve_instances"] = [_instance(spec, plan, rep, m, host.chip or "") for rep, m in members]
    return out


def inventory_files(spec: SiteSpec, plan: SitePlan, spec_sha256: str) -> Files:
    """Relative path -> YAML content, in a fixed order."""
    files: Files = {
        "hosts.yml": inventory_groups(spec, plan),
        "group_vars/all.yml": {
            **_all_vars(spec, plan, spec_sha256),
            **_container_runtime_vars(spec),
        },
        "group_vars/npu.yml": _npu_vars(spec, plan),
    }
    servers = {s.name: s for s in spec.servers}
    members: dict[str, list[tuple[ReplicaPlan, MemberPlan]]] = {}  # one pass: linear in the site size
    for rep in plan.replicas:
        for m in rep.members:
            members.setdefault(m.server, []).append((rep, m))
    hccn = hccn_views(plan)
    for host in plan.hosts:
        files[f"host_vars/{host.name}.yml"] = _host_vars(
            spec, plan, host, servers[host.name], members.get(host.name, [])
        )
        if host.chip is not None:
            files[f"host_vars/{host.name}.yml"].update(_hccn_network_vars(hccn[host.name]))
    return files
