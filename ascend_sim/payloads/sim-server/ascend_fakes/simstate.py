#!/usr/bin/env python3
"""State of a simulated Ascend server, shared by the fake tools (python3 standard library only).

Every absolute path is taken under $ASCEND_SIM_ROOT (default "/"), so unit tests run the tools in a temp dir.
"Logical id" below = the N of /dev/davinciN = `hccn_tool -i N` = npu-smi's Phy-ID (A3) / Device (310P) column.

/var/lib/ascend-sim/hardware.json (written by `sim up`; the driver installer keeps a copy in /usr/local/dcmi/
so npu-smi also works inside containers that mount /usr/local/dcmi, as the vllm-ascend docs do):
  {"server": "node-1", "profile": "atlas-800t-a2", "chip": "910B3", "npu_smi_name": "910B3", "cards": 8,
   "devices_per_card": 1, "hbm_mb": 65536, "pci_device_id": "d802", "bus_ids": ["0000:C1:00.0", ...],
   "product": "Atlas 800T A2"}
  bus_ids: one per logical id, or one per card (a 310P card's chips then share it, an A3 die 1 sits two buses
  above die 0 as in 9D/9F). Optional: "npu_ids" (card ids, default 0..cards-1), "cpu_affinity" (one "a-b" per
  logical id), "firmware_version" (factory firmware in flash, shown until a firmware package is installed),
  "arch" (the simulated `arch`, checked by the .run installers), "npu_name" (A3 board -c, default "9392").
faults.json (`sim fault`): {"npu_unhealthy": [logical ids], "link_down": [logical ids], "driver_fails": bool,
  "disk_full": bool}; optional {"npu_health": {"<logical id>": "Warning"|"Alarm"|"Critical"}}.
  An unhealthy id shows "Alarm" (sample 4c) unless npu_health names another level.
processes.json (fake vLLM server / runtime; also read from /usr/local/dcmi/ascend-sim-processes.json):
  {"<logical id>": [{"pid": 4286, "name": "VLLMWorker_TP", "memory_mb": 59543}]}; absent or {} = free.
telemetry.json (optional, tests pin the table's live values): {"<logical id>": {"power": "99.0", "temp": 44,
  "aicore": 0, "hbm_used": 3338, "hugepages": [0, 0], "memory_used": 0, "memory_total": 0}}
pending.json (.run installers whose change needs a reboot; apply_pending() runs at each simulated boot):
  {"driver": {"version": "25.0.rc1.1", "package": "Ascend-hdk-910b-npu-driver_25.0.rc1.1_linux-aarch64.run",
              "files": {"/usr/local/Ascend/driver/version.info": "Version=25.0.rc1.1\\n..."}},
   "firmware": {"version": "7.7.0.1.231", "package": "...",
                "files": {"/usr/local/Ascend/firmware/version.info": "Version=7.7.0.1.231\\n"}}}
  ("files": absolute paths without the root prefix -> new content.)
fabric/<server>.json (hccn_tool; the fabric dir is shared by every server of a cluster):
  {"<logical id>": {"address": "10.0.0.11", "netmask": "255.255.255.0", "gateway": "10.0.0.1", "link": "UP"}}

CLI (for the init or `sim fault`): simstate.py apply-pending | on-boot | sync-fabric
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ascend_fakes import hdk_compat
else:  # a standalone script's sibling (the fakes' directory is on sys.path, see npu_smi.py)
    sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
    import hdk_compat

STATE = "/var/lib/ascend-sim"
HARDWARE_JSON = f"{STATE}/hardware.json"
FAULTS_JSON = f"{STATE}/faults.json"
PROCESSES_JSON = f"{STATE}/processes.json"
TELEMETRY_JSON = f"{STATE}/telemetry.json"
PENDING_JSON = f"{STATE}/pending.json"
FABRIC_DIR = f"{STATE}/fabric"
ASCEND = "/usr/local/Ascend"
DRIVER_DIR = f"{ASCEND}/driver"
DRIVER_VERSION_INFO = f"{DRIVER_DIR}/version.info"
FIRMWARE_VERSION_INFO = f"{ASCEND}/firmware/version.info"
UPGRADE_TOOL = f"{DRIVER_DIR}/tools/upgrade-tool"
SIM_TOOLS_DIR = f"{DRIVER_DIR}/tools/ascend-sim"
DCMI_DIR = "/usr/local/dcmi"
HARDWARE_COPY = f"{DCMI_DIR}/ascend-sim-hardware.json"
PROCESSES_COPY = f"{DCMI_DIR}/ascend-sim-processes.json"
HCCN_CONF = "/etc/hccn.conf"
INSTALL_INFO = "/etc/ascend_install.info"
SECLOG_DIR = "/var/log/ascend_seclog"
INSTALL_LOG = f"{SECLOG_DIR}/ascend_install.log"
OPERATION_LOG = f"{SECLOG_DIR}/operation.log"
EXTRA_NODES = ("davinci_manager", "devmm_svm", "hisi_hdc")
HEALTH_LEVELS = ("OK", "Warning", "Alarm", "Critical", "UNKNOWN")  # npucli's health values

# Defaults from public npu-smi captures: 910B4 x8 bus order, A3 node (vllm-project/vllm-ascend#4266), 300I Duo
# (#2416), topo CPU Affinity.
DEFAULT_BUS = {
    "910b": ["C1", "C2", "81", "82", "01", "02", "41", "42"],
    "910_93": [f"{0x9D - 4 * (i // 2) + 2 * (i % 2):02X}" for i in range(16)],  # 9D 9F 99 9B ... 81 83
    "310p": ["01", "03", "81", "84", "41", "43", "C1", "C3"],
}
DEFAULT_AFFINITY_910B = ["144-167", "144-167", "96-119", "96-119", "0-23", "0-23", "48-71", "48-71"]
FAMILY_BY_PCI = {"d802": "910b", "d803": "910_93", "d500": "310p"}


def root() -> str:
    return os.environ.get("ASCEND_SIM_ROOT") or "/"


def under_test_root() -> bool:
    return os.path.realpath(root()) != "/"


def p(path: str) -> str:
    """The real location of an absolute path of the simulated host."""
    return os.path.join(root(), path.lstrip("/"))


# ------------------------------------------------------------------------------------------------ files


def read_text(path: str, default: str = "") -> str:
    try:
        with open(p(path), encoding="utf-8") as f:
            return f.read()
    except OSError:
        return default


def read_json(path: str, default: Any = None) -> Any:
    text = read_text(path)
    if not text.strip():
        return default
    try:
        return json.loads(text)
    except ValueError:
        return default


def write_text(path: str, text: str, mode: int = 0o644) -> None:
    """Atomic write (temp file + rename in the same directory)."""
    real = p(path)
    os.makedirs(os.path.dirname(real), exist_ok=True)
    tmp = os.path.join(os.path.dirname(real), f".{os.path.basename(real)}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_json(path: str, data: Any) -> None:
    write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(p(path))


@contextlib.contextmanager
def locked(path: str, shared: bool = False) -> Iterator[None]:
    """flock on <path>.lock (fabric files are written by several servers' hccn_tool at once)."""
    real = p(path) + ".lock"
    os.makedirs(os.path.dirname(real), exist_ok=True)
    with open(real, "a", encoding="utf-8") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def read_kv(path: str) -> dict[str, str]:
    """key=value files: version.info, /etc/ascend_install.info, /etc/hccn.conf."""
    out: dict[str, str] = {}
    for line in read_text(path).splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and not key.lstrip().startswith("#"):
            out[key.strip()] = value.strip()
    return out


# --------------------------------------------------------------------------------------------- hardware


class Device:
    """One logical NPU chip (die)."""

    def __init__(self, logic_id: int, npu_id: int, chip_id: int, bus_id: str, hbm_mb: int) -> None:
        self.logic_id = logic_id
        self.npu_id = npu_id
        self.chip_id = chip_id
        self.bus_id = bus_id
        self.hbm_mb = hbm_mb


def norm_bus(bus: str) -> str:
    """'c1' / 'C1:00.0' / '0000:c1:00.0' -> '0000:C1:00.0' (npu-smi's form)."""
    b = bus.strip().upper()
    if re.fullmatch(r"[0-9A-F]{1,2}", b):
        b = f"{int(b, 16):02X}:00.0"
    if re.fullmatch(r"[0-9A-F]{2}:[0-9A-F]{2}\.[0-7]", b):
        b = "0000:" + b
    return b


def _bus_plus(bus: str, n: int) -> str:
    dom, b, rest = bus.split(":", 2)
    return f"{dom}:{(int(b, 16) + n) % 256:02X}:{rest}"


class Hardware:
    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.server = str(raw.get("server") or os.uname().nodename)
        self.chip = str(raw.get("chip") or "910B3")
        pci = str(raw.get("pci_device_id") or "").lower().removeprefix("0x")
        chip_l = self.chip.lower()
        fam = FAMILY_BY_PCI.get(pci) or (
            "910_93" if "910_93" in chip_l else "310p" if "310p" in chip_l else "910b"
        )
        self.family = fam
        self.pci_device_id = pci or {v: k for k, v in FAMILY_BY_PCI.items()}[fam]
        self.npu_smi_name = str(raw.get("npu_smi_name") or ("Ascend910" if fam == "910_93" else self.chip))
        self.cards = int(raw["cards"]) if raw.get("cards") is not None else 8  # 0: a host without NPUs
        self.per_card = int(raw.get("devices_per_card") or (1 if fam == "910b" else 2))
        self.product = str(raw.get("product") or "")
        self.npu_ids = [int(x) for x in raw.get("npu_ids") or range(self.cards)]
        total = self.cards * self.per_card
        hbm = raw.get("hbm_mb") or (65536 if fam != "310p" else 44216)
        hbms = [int(x) for x in hbm] if isinstance(hbm, list) else [int(hbm)] * total
        buses = [norm_bus(str(b)) for b in raw.get("bus_ids") or []]
        if not buses:
            buses = [norm_bus(b) for b in DEFAULT_BUS[fam]]
            buses = buses[:total] if fam == "910_93" else buses[: self.cards]
        while buses and (len(buses) < min(total, self.cards) or (fam == "910_93" and len(buses) < total)):
            buses.append(_bus_plus(buses[-1], 2))
        per_device = len(buses) >= total
        self.devices: list[Device] = []
        for card in range(self.cards):
            for chip in range(self.per_card):
                logic = card * self.per_card + chip
                if per_device:
                    bus = buses[logic]
                elif fam == "910_93":
                    bus = _bus_plus(buses[card], 2 * chip)
                else:
                    bus = buses[card]
                self.devices.append(Device(logic, self.npu_ids[card], chip, bus, hbms[logic % len(hbms)]))

    @property
    def total(self) -> int:
        return len(self.devices)

    def device(self, logic_id: int) -> Device | None:
        return next((d for d in self.devices if d.logic_id == logic_id), None)

    def card(self, npu_id: int) -> list[Device]:
        return [d for d in self.devices if d.npu_id == npu_id]

    def pci_functions(self) -> list[Device]:
        """One entry per PCI function (a 300I Duo card is one function for its two chips)."""
        seen: set[str] = set()
        out = []
        for d in self.devices:
            if d.bus_id not in seen:
                seen.add(d.bus_id)
                out.append(d)
        return out

    def cpu_affinity(self, logic_id: int) -> str:
        aff = self.raw.get("cpu_affinity")
        if isinstance(aff, list) and logic_id < len(aff):
            return str(aff[logic_id])
        if self.family == "910b":
            return DEFAULT_AFFINITY_910B[logic_id % 8]
        return f"{(logic_id // 2) * 24}-{(logic_id // 2) * 24 + 23}"


def load_hardware() -> Hardware | None:
    raw = read_json(HARDWARE_JSON) or read_json(HARDWARE_COPY)
    return Hardware(raw) if isinstance(raw, dict) else None


def seeded(hw: Hardware, logic_id: int, salt: str) -> int:
    """A stable pseudo-random number per server and device (the fakes' live values never flicker)."""
    digest = hashlib.sha256(f"{hw.server}:{logic_id}:{salt}".encode()).hexdigest()
    return int(digest[:8], 16)


# ------------------------------------------------------------------------------------ faults, processes


def faults() -> dict[str, Any]:
    data = read_json(FAULTS_JSON, {})
    return data if isinstance(data, dict) else {}


def health(logic_id: int) -> str:
    f = faults()
    named = (f.get("npu_health") or {}).get(str(logic_id))
    if named in HEALTH_LEVELS:
        return str(named)
    return "Alarm" if logic_id in (f.get("npu_unhealthy") or []) else "OK"


def link_up(logic_id: int) -> bool:
    return logic_id not in (faults().get("link_down") or [])


def processes() -> dict[int, list[dict[str, Any]]]:
    """processes.json merged with /usr/local/dcmi/ascend-sim-processes.json (the fake vLLM server writes there
    when its container only mounts /usr/local/dcmi, as vllm-ascend's docker run does)."""
    out: dict[int, list[dict[str, Any]]] = {}
    for path in (PROCESSES_JSON, PROCESSES_COPY):
        data = read_json(path, {})
        for key, procs in data.items() if isinstance(data, dict) else []:
            if str(key).isdigit() and isinstance(procs, list):
                out.setdefault(int(key), []).extend(x for x in procs if isinstance(x, dict))
    return out


def telemetry(logic_id: int) -> dict[str, Any]:
    data = read_json(TELEMETRY_JSON, {})
    entry = data.get(str(logic_id)) if isinstance(data, dict) else None
    return entry if isinstance(entry, dict) else {}


# -------------------------------------------------------------------------------------------- versions


def version_key(version: str) -> list[tuple[int, int]]:
    """24.1.rc3 < 24.1.0 < 24.1.0.3; 7.2.0.1.231 <= 7.2.99 (missing components count as 0)."""
    key = []
    for tok in re.findall(r"[0-9]+|[a-z]+", version.lower()):
        key.append((1, int(tok)) if tok.isdigit() else (0, {"alpha": 1, "beta": 2, "rc": 3}.get(tok, 0)))
    while key and key[-1] == (1, 0):
        key.pop()
    return key


def driver_version() -> str | None:
    return read_kv(DRIVER_VERSION_INFO).get("Version") or None


def firmware_version(hw: Hardware | None) -> str | None:
    installed = read_kv(FIRMWARE_VERSION_INFO).get("Version")
    return installed or (str(hw.raw["firmware_version"]) if hw and hw.raw.get("firmware_version") else None)


def compatibility(hw: Hardware | None) -> str:
    """OK / NOK / UNKNOWN: the running firmware against the driver's compatible_version_fw=[min,max] and the
    driver against the installed firmware package's compatible_version_drv (hdk_compat.py)."""
    firmware = read_kv(FIRMWARE_VERSION_INFO)
    return hdk_compat.board_compatibility(
        driver_version(),
        read_kv(DRIVER_VERSION_INFO).get("compatible_version_fw", ""),
        firmware_version(hw),
        firmware.get("compatible_version_drv", "") if firmware.get("Version") else "",
    )
