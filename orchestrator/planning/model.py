"""The site plan: everything derived from the spec that roles consume (they never recompute it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from orchestrator.planning.load import LoadPlan
    from orchestrator.planning.pd_model import PdPlan
    from orchestrator.planning.warmup import WarmupPlan

ReplicaMode = Literal["single", "dp", "ray"]
MemberRole = Literal["head", "headless", "ray-worker"]


@dataclass(frozen=True)
class HccnDevice:
    index: int
    address: str
    netmask: str
    gateway: str | None
    netdetect: str | None


@dataclass(frozen=True)
class Capacity:
    """Memory per device (GiB) for one replica; the worst device of the replica."""

    usable_gib: float  # what one process can allocate (torch_npu total capacity), not the nominal HBM
    budget_gib: float  # usable x gpu_memory_utilization
    weights_gib: float
    overhead_gib: float
    kv_gib_per_seq: float  # one sequence of max_model_len
    max_num_seqs: int
    full_seqs_fit: int  # sequences of max_model_len that fit next to the weights

    @property
    def kv_budget_gib(self) -> float:
        return self.budget_gib - self.weights_gib - self.overhead_gib

    @property
    def fits(self) -> bool:
        return self.kv_budget_gib >= self.kv_gib_per_seq

    @property
    def full_concurrency_fits(self) -> bool:
        return self.full_seqs_fit >= self.max_num_seqs

    @property
    def headroom_gib(self) -> float:
        """Budget left after weights, overhead and a full batch of max-length sequences."""
        return self.kv_budget_gib - self.kv_gib_per_seq * self.max_num_seqs


@dataclass(frozen=True)
class MemberPlan:
    server: str
    address: str
    node_rank: int
    role: MemberRole
    devices: tuple[int, ...]
    dp_size_local: int
    dp_start_rank: int
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    # Ray replicas only: this node's `ray start` argv (after the `ray` command) and the IP it registers
    # with. The head runs it, then `vllm` + args in the same container; a worker runs only `ray start`
    # (args is empty: no `vllm serve` on Ray workers). docs/ray.md.
    ray_start_args: tuple[str, ...] = ()
    ray_node_ip: str | None = None

    @property
    def visible_devices(self) -> str:
        return ",".join(str(d) for d in self.devices)


@dataclass(frozen=True)
class ReplicaPlan:
    name: str
    group: str
    profile: str
    chip: str
    mode: ReplicaMode
    tp: int
    pp: int
    dp: int
    ep: bool
    port: int
    dp_rpc_port: int
    members: tuple[MemberPlan, ...]
    capacity: Capacity
    startup_timeout_s: int
    ray_address: str | None = None  # Ray replicas: the head's GCS address "ip:port"

    @property
    def world_size(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def ep_size(self) -> int:
        return self.tp * self.dp if self.ep else 1

    @property
    def head(self) -> MemberPlan:
        return self.members[0]

    @property
    def endpoint(self) -> str:
        return f"http://{self.head.address}:{self.port}/v1"


@dataclass(frozen=True)
class ImagePlan:
    chip: str
    soc_version: str
    cann: str  # the CANN of this chip's base image (310P may differ from the stack's)
    os_family: str  # container OS family: ubuntu | openeuler
    base_image: str  # FROM of our Dockerfile (BASE_IMAGE): the CANN image upstream's Dockerfile uses
    upstream_image: str  # the published vllm-ascend image of the same release, chip and OS
    tag: str
    build_args: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class SkippedSetting:
    name: str
    reason: str


@dataclass(frozen=True)
class HostTuningPlan:
    """Host settings as the host-tuning role applies them on this site's kernel."""

    kernel: str  # kernel line of the site's OS release ('5.15'), "" when unknown
    sysctls: tuple[tuple[str, int | str], ...]  # /etc/sysctl.d
    debugfs: tuple[tuple[str, int | str], ...]  # /sys/kernel/debug/<path>, re-applied at boot
    skipped: tuple[SkippedSetting, ...]
    irqbalance: str | None  # enabled | disabled | None (left alone)
    irq_affinity: str | None  # npu-numa | None (IRQs not pinned)
    governor: str | None = None  # cpufreq governor of every CPU, None: left alone
    nr_hugepages: int | None = None  # 2 MiB huge pages reserved with the sysctl vm.nr_hugepages
    # sysfs attributes: THP, and hugepages of a size other than 2 MiB (2 MiB pages are vm.nr_hugepages)
    sysfs: tuple[tuple[str, int | str], ...] = ()

    @property
    def applied_sysctls(self) -> dict[str, int | str]:
        """What the role writes to sysctl.d: the sysctls, and vm.nr_hugepages when 2 MiB pages are reserved
        (a plain merge of two planned values; nothing is decided here)."""
        extra = {} if self.nr_hugepages is None else {"vm.nr_hugepages": self.nr_hugepages}
        return dict(sorted({**dict(self.sysctls), **extra}.items()))


@dataclass(frozen=True)
class DiskNeed:
    path: str
    purpose: str
    min_free_gib: float
    counts_existing: bool  # what is already at the path counts towards the need (weights already there)


@dataclass(frozen=True)
class PreflightOs:
    """What every server must run (role preflight): the release, its kernel line (or newer), time sync."""

    distro: str
    version: str
    kernel_line: str | None
    time_sync: str


@dataclass(frozen=True)
class PreflightNpu:
    """The NPUs lspci must show on an NPU server (vendor 19e5, the chip's device id, functions)."""

    chip: str
    arch: str
    pci_vendor_id: str
    pci_device_id: str
    pci_functions: int


@dataclass(frozen=True)
class HccnPeer:
    server: str
    index: int
    address: str


@dataclass(frozen=True)
class RoleHosts:
    """Which servers play each site role (planning.roles): the inventory groups and the phase hosts."""

    npu: tuple[str, ...]
    build: str | None  # image.build_host, else the first 'build' server, else the first NPU server
    gateway: str | None  # None when the gateway is disabled
    monitoring: str | None  # None when monitoring is disabled
    container_runtime: tuple[str, ...]
    monitored: tuple[str, ...]  # node_exporter: NPU servers and the monitoring host


@dataclass(frozen=True)
class RolloutPlan:
    """The serve phase's rolling update: `serial` in head servers (canary, then batch), batch_size parsed."""

    batch_size: int  # replicas per later batch (rollout.batch_size: N or N% of the replicas)
    serial: tuple[int, ...]
    max_fail_percentage: int


@dataclass(frozen=True)
class DriversPlan:
    serial: tuple[int | str, ...]  # one server alone first, then software.reboot.batch_size (N or N%)
    cache_dir: str  # where the verified .run packages are kept on the host
    holder_services: tuple[str, ...]  # services holding the device nodes, stopped for an upgrade


@dataclass(frozen=True)
class StackPlan:
    vllm_ascend: str
    vllm: str
    cann: str
    torch: str
    torch_npu: str
    triton_ascend: str
    python: str


@dataclass(frozen=True)
class HostPlan:
    name: str
    address: str
    ssh_port: int
    roles: tuple[str, ...]
    profile: str | None
    chip: str | None
    devices: int
    hbm_gib: int
    hccn: tuple[HccnDevice, ...]
    replicas: tuple[str, ...]
    ports: tuple[tuple[int, str], ...]
    tuning: HostTuningPlan | None = None  # NPU servers: the site's tuning with the server's overrides
    preflight_npu: PreflightNpu | None = None
    disk: tuple[DiskNeed, ...] = ()
    hccn_peers: tuple[HccnPeer, ...] = ()  # peer NICs the fabric gate pings
    rank_tables: tuple[tuple[str, dict[str, Any]], ...] = ()  # (replica, HCCL rank table)


@dataclass(frozen=True)
class SitePlan:
    site: str
    stack: StackPlan
    images: tuple[ImagePlan, ...]
    hosts: tuple[HostPlan, ...]
    replicas: tuple[ReplicaPlan, ...]
    model_name: str
    served_name: str
    weights_gib: float
    quantization: str
    dtype: str
    tuning: HostTuningPlan  # always set by build_plan
    preflight: PreflightOs
    roles: RoleHosts
    rollout: RolloutPlan
    drivers: DriversPlan
    container_runtime_packages: tuple[str, ...]
    warnings: tuple[str, ...] = field(default=())
    # serving.disaggregation: the prefill and decode pools (planning/pd_model.py); replicas is then empty
    pd: PdPlan | None = None
    warmup: WarmupPlan | None = None  # rollout.warmup (planning/warmup.py); None when it is off
    load: LoadPlan | None = None  # --safetensors-load-strategy (planning/load.py); set by build_plan

    def host(self, name: str) -> HostPlan:
        return next(h for h in self.hosts if h.name == name)

    def image_for(self, chip: str) -> ImagePlan:
        return next(i for i in self.images if i.chip == chip)
