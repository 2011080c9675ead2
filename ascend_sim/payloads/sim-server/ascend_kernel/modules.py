"""The kernel modules a simulated server can load: host RDMA/NIC drivers with their parameters, what
loading and unloading them does, and the modprobe.d configuration modprobe applies.

Parameters (name, type, sysfs permission, default, description) are read from torvalds/linux v6.1 unless
noted: drivers/net/ethernet/mellanox/mlx5/core/main.c (debug_mask uint 0644, prof_sel uint 0444 default 2,
"Valid range 0 - 2": an out-of-range value is reset to 2 with a warning, mlx5_core_verify_params),
MLNX_OFED mlx5_core main.c (probe_vf bool 0644 default Y: the catalog lists it), drivers/infiniband/core/
device.c (netns_mode bool 0444 default Y), mad.c (send_queue_size / recv_queue_size int 0444, 128 / 512),
rw.c (force_mr bool, permission 0: no sysfs file), drivers/infiniband/ulp/ipoib/ipoib_main.c (send_queue_size
128, recv_queue_size 256 int 0444, debug_level int 0644, mcast_debug_level int 0644), ipoib_cm.c
(max_nonsrq_conn_qp int 0444 default 128), drivers/net/ethernet/hisilicon/hns3/hns3_enet.c (debug int,
permission 0; tx_sgl uint 0600 default 1; tx_spare_buf_size uint 0400 default 0). Dependencies as modinfo
shows them on a Debian 12 arm64 kernel, limited to this set.
Kernel behaviour (kernel/module/main.c, kernel/params.c): an unknown parameter is ignored with
"<module>: unknown parameter '<p>' ignored" in the kernel log and the module loads; a malformed value for a
known parameter fails the load with EINVAL ("<module>: `<value>' invalid for parameter `<p>'").
"""

from __future__ import annotations

import errno
import glob
import os
import shlex
from dataclasses import dataclass, field

from ascend_kernel import values
from ascend_kernel.state import KernelError, State, p, uptime_stamp


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # int, uint, bool
    perm: int  # sysfs permission; 0: no file in /sys/module/<m>/parameters
    default: str
    desc: str
    valid: tuple[int, int] | None = None  # a value outside is reset to the default with a warning

    def parse(self, module: str, raw: str) -> str:
        bad = KernelError(errno.EINVAL, f"{module}: `{raw}' invalid for parameter `{self.name}'")
        try:
            if self.kind == "bool":
                return values.kstrtobool(raw if raw else "Y")
            number = values.c_int(raw)
        except KernelError:
            raise bad from None
        lo, hi = (0, 2**32 - 1) if self.kind == "uint" else (-(2**31), 2**31 - 1)
        if not lo <= number <= hi:
            raise bad
        return str(number)


@dataclass(frozen=True)
class Module:
    name: str
    size: int
    depends: tuple[str, ...] = ()
    params: tuple[Param, ...] = ()
    path: str = ""  # under /lib/modules/<release>/
    description: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    def param(self, name: str) -> Param | None:
        return next((x for x in self.params if x.name == name), None)


_IB = "kernel/drivers/infiniband"
_MLX = "kernel/drivers/net/ethernet/mellanox/mlx5/core"
_HNS = "kernel/drivers/net/ethernet/hisilicon/hns3"
MODULES: dict[str, Module] = {
    m.name: m
    for m in (
        Module("ib_core", 401408, (), (
            Param("netns_mode", "bool", 0o444, "Y", "Share device among net namespaces; default=1 (shared)"),
            Param("send_queue_size", "int", 0o444, "128", "Size of send queue in number of work requests"),
            Param("recv_queue_size", "int", 0o444, "512", "Size of receive queue in number of work requests"),
            Param("force_mr", "bool", 0, "N", "Force usage of MRs for RDMA READ/WRITE operations"),
        ), f"{_IB}/core/ib_core.ko", "core kernel InfiniBand API"),
        Module("ib_uverbs", 155648, ("ib_core",), (), f"{_IB}/core/ib_uverbs.ko",
               "InfiniBand userspace verbs"),
        Module("ib_cm", 118784, ("ib_core",), (), f"{_IB}/core/ib_cm.ko", "InfiniBand CM"),
        Module("iw_cm", 49152, ("ib_core",), (), f"{_IB}/core/iw_cm.ko", "iWARP CM"),
        Module("rdma_cm", 126976, ("ib_core", "ib_cm", "iw_cm"), (), f"{_IB}/core/rdma_cm.ko",
               "Generic RDMA CM Agent"),
        Module("rdma_ucm", 36864, ("ib_core", "ib_uverbs", "rdma_cm"), (), f"{_IB}/core/rdma_ucm.ko",
               "RDMA Userspace Connection Manager Access"),
        Module("ib_ipoib", 135168, ("ib_core", "ib_cm"), (
            Param("send_queue_size", "int", 0o444, "128", "Number of descriptors in send queue"),
            Param("recv_queue_size", "int", 0o444, "256", "Number of descriptors in receive queue"),
            Param("debug_level", "int", 0o644, "0", "Enable debug tracing if > 0"),
            Param("mcast_debug_level", "int", 0o644, "0", "Enable multicast debug tracing if > 0"),
            Param("max_nonsrq_conn_qp", "int", 0o444, "128",
                  "Max number of connected-mode QPs per interface (applied only if shared receive queue is "
                  "not available)"),
        ), f"{_IB}/ulp/ipoib/ib_ipoib.ko", "IP-over-InfiniBand net driver"),
        Module("mlx5_core", 1789952, (), (
            Param("debug_mask", "uint", 0o644, "0",
                  "debug mask: 1 = dump cmd data, 2 = dump cmd exec time, 3 = both. Default=0"),
            Param("prof_sel", "uint", 0o444, "2", "profile selector. Valid range 0 - 2", (0, 2)),
            Param("probe_vf", "bool", 0o644, "Y", "probe VFs or not, 0 = not probe, 1 = probe. Default = 1"),
        ), f"{_MLX}/mlx5_core.ko", "Mellanox 5th generation network adapters (ConnectX series) core driver"),
        Module("mlx5_ib", 389120, ("ib_uverbs", "ib_core", "mlx5_core"), (),
               "kernel/drivers/infiniband/hw/mlx5/mlx5_ib.ko", "Mellanox 5th generation HCA IB driver"),
        Module("hnae3", 53248, (), (), f"{_HNS}/hnae3.ko",
               "HNAE3(Hisilicon Network Acceleration Engine) Framework"),
        Module("hns3", 167936, ("hnae3",), (
            Param("debug", "int", 0, "-1", "Network interface message level setting"),
            Param("tx_sgl", "uint", 0o600, "1",
                  "Minimum number of frags when using dma_map_sg() to optimize the IOMMU mapping"),
            Param("tx_spare_buf_size", "uint", 0o400, "0", "Size used to allocate tx spare buffer"),
        ), f"{_HNS}/hns3.ko", "HNS3: Hisilicon Ethernet Driver"),
        Module("hns_roce_hw_v2", 196608, ("ib_core", "hnae3"), (),
               "kernel/drivers/infiniband/hw/hns/hns_roce_hw_v2.ko", "Hisilicon Hip08 Family RoCE Driver"),
    )
}  # fmt: skip

MODPROBE_DIRS = ("/etc/modprobe.d", "/run/modprobe.d", "/usr/local/lib/modprobe.d", "/usr/lib/modprobe.d",
                 "/lib/modprobe.d")  # fmt: skip


def norm(name: str) -> str:
    return name.replace("-", "_")


def config_files(dirs: tuple[str, ...] = MODPROBE_DIRS) -> list[str]:
    """*.conf files of the modprobe.d directories; a name in an earlier directory hides the same name in a
    later one; read in the order of their names (kmod's conf_files_list)."""
    chosen: dict[str, str] = {}
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(p(d), "*.conf"))):
            chosen.setdefault(os.path.basename(path), path)
    return [chosen[n] for n in sorted(chosen)]


def config_options(module: str) -> list[str]:
    """`options <module> ...` words from modprobe.d, in file order."""
    out: list[str] = []
    for path in config_files():
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().replace("\\\n", " ").splitlines()
        except OSError:
            continue
        for line in lines:
            words = _split(line.split("#", 1)[0])
            if len(words) >= 2 and words[0] == "options" and norm(words[1]) == module:
                out += words[2:]
    return out


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


class Modules:
    """Loaded modules and their parameters in the kernel state; what insmod/rmmod do to them."""

    def __init__(self, state: State) -> None:
        self.state = state

    def loaded(self) -> list[str]:
        return [m for m in self.state.load()["modules"] if m in MODULES]

    def params(self, module: str) -> dict[str, str]:
        got = self.state.load()["params"].get(module)
        return dict(got) if isinstance(got, dict) else {}

    def holders(self, module: str) -> list[str]:
        return [m for m in self.loaded() if module in MODULES[m].depends]

    def insert(self, module: str, args: list[str]) -> list[str]:
        """init_module: parse the arguments, load; returns the kernel log lines it wrote."""
        mod = MODULES[module]
        if module in self.loaded():
            raise KernelError(errno.EEXIST, "Module already in kernel")
        missing = [d for d in mod.depends if d not in self.loaded()]
        if missing:
            raise KernelError(errno.ENOENT, "Unknown symbol in module")
        settings = {x.name: x.default for x in mod.params}
        log: list[str] = []
        for word in args:
            key, _, raw = word.partition("=")
            param = mod.param(norm(key))
            if param is None:
                log.append(f"{module}: unknown parameter '{key}' ignored")
                continue
            try:
                settings[param.name] = param.parse(module, raw)
            except KernelError as exc:
                self._log([*log, exc.strerror or ""])
                raise KernelError(errno.EINVAL, "Invalid argument") from None
        for param in mod.params:
            if param.valid and not param.valid[0] <= int(settings[param.name]) <= param.valid[1]:
                log.append(f"{module}: {param.name} {settings[param.name]} out of range, changing to default "
                           f"{param.default}")  # fmt: skip
                settings[param.name] = param.default
        with self.state.change() as data:
            data["modules"] = [m for m in data["modules"] if m != module] + [module]
            data["params"][module] = settings
            data["dmesg"] += [f"{uptime_stamp()} {line}" for line in log]
        return log

    def remove(self, module: str) -> None:
        """delete_module: refused while another loaded module depends on it."""
        if module not in self.loaded():
            raise KernelError(errno.ENOENT, f"Module {module} is not currently loaded")
        users = self.holders(module)
        if users:
            raise KernelError(errno.EBUSY, f"Module {module} is in use by: {' '.join(users)}")
        with self.state.change() as data:
            data["modules"] = [m for m in data["modules"] if m != module]
            data["params"].pop(module, None)

    def set_param(self, module: str, name: str, text: str) -> None:
        """A write to /sys/module/<m>/parameters/<p> (only parameters with a writable permission)."""
        param = MODULES[module].param(name)
        if param is None:
            raise KernelError(errno.ENOENT, "No such file or directory")
        value = param.parse(module, text.strip())
        with self.state.change() as data:
            data["params"].setdefault(module, {})[name] = value

    def _log(self, lines: list[str]) -> None:
        with self.state.change() as data:
            data["dmesg"] += [f"{uptime_stamp()} {line}" for line in lines if line]


def proc_modules(mods: Modules) -> str:
    """/proc/modules: newest first; "name size refcnt holders, state address" (kernel/module/procfs.c)."""
    lines = []
    for name in reversed(mods.loaded()):
        users = mods.holders(name)
        used = "".join(f"{u}," for u in users) or "-"
        lines.append(f"{name} {MODULES[name].size} {len(users)} {used} Live 0x0000000000000000\n")
    return "".join(lines)
