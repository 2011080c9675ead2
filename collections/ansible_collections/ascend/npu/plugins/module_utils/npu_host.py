# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""Read the Ascend state of a host: files under a root, npu-smi, upgrade-tool and the containers that hold
NPU devices. Shared by the npu_info and hdk_package modules; every call is read-only.

`run` is a callable like AnsibleModule.run_command: run(argv) -> (rc, stdout, stderr).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Callable, List, Tuple

from ansible_collections.ascend.npu.plugins.module_utils import npu_smi, version_info

Runner = Callable[[List[str]], Tuple[int, str, str]]
NPU_SMI_PATHS = ("/usr/local/sbin/npu-smi", "/usr/local/bin/npu-smi")  # newer / older drivers
UPGRADE_TOOL = "/usr/local/Ascend/driver/tools/upgrade-tool"
DEVICE_NODE = re.compile(r"^/dev/(davinci\d+|davinci_manager|devmm_svm|hisi_hdc)$")


def under(root: str, path: str) -> str:
    return os.path.join(root or "/", path.lstrip("/"))


def read_text(root: str, path: str) -> str | None:
    try:
        with open(under(root, path), encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def version_file(root: str, kind: str) -> dict[str, Any]:
    """The driver's or firmware's version.info: {"installed", "version", "info", "path"}."""
    path = version_info.DRIVER_VERSION_INFO if kind == "driver" else version_info.FIRMWARE_VERSION_INFO
    text = read_text(root, path)
    info = version_info.parse_kv(text) if text is not None else {}
    return {
        "installed": bool(info.get("Version")),
        "version": info.get("Version"),
        "info": info,
        "path": path,
        "present": os.path.lexists(under(root, path)),  # present but text None: unreadable
        "readable": text is not None,
    }


PCI_DEVICES = "/sys/bus/pci/devices"
HUAWEI_VENDOR = "0x19e5"  # PCI vendor id of Huawei (the NPUs' sysfs `vendor`; lspci 19e5:d802)


def pci_functions(root: str) -> list[dict[str, str]]:
    """The Huawei PCI functions the kernel sees (sysfs vendor 0x19e5): address and device id (0xd802...),
    whether or not the NPU driver is loaded (PCI enumeration does not need it)."""
    base = under(root, PCI_DEVICES)
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    out = []
    for name in names:
        vendor = (read_text(root, f"{PCI_DEVICES}/{name}/vendor") or "").strip().lower()
        if vendor == HUAWEI_VENDOR:
            device = (read_text(root, f"{PCI_DEVICES}/{name}/device") or "").strip().lower()
            out.append({"address": name, "device": device})
    return out


def find_npu_smi(root: str) -> dict[str, Any]:
    """Where npu-smi is; a directory in its place (a bad container bind mount) is reported, not used."""
    problems = []
    for path in NPU_SMI_PATHS:
        real = under(root, path)
        if os.path.isdir(real):
            problems.append(f"{path} is a directory (a container bind mount of a missing file?)")
        elif os.path.isfile(real) and os.access(real, os.X_OK):
            return {"present": True, "path": path, "real": real, "problem": ""}
    return {"present": False, "path": None, "real": None, "problem": "; ".join(problems)}


def _board_entry(npu_id: int, board: dict[str, str]) -> dict[str, Any]:
    return {
        "npu_id": npu_id,
        "software_version": board.get("Software Version"),
        "firmware_version": board.get("Firmware Version"),
        "compatibility": board.get("Compatibility"),
        "pci_device_id": board.get("PCI Device ID"),
        "chip_count": int(board["Chip Count"]) if board.get("Chip Count", "").isdigit() else None,
    }


def npu_smi_state(run: Runner, tool: str, boards: bool) -> dict[str, Any]:
    """npus (-l), chips (-m + table health), processes, boards (-t board per NPU) and a usable flag."""
    rc, table, err = run([tool, "info"])
    out: dict[str, Any] = {
        "usable": rc == 0,
        "error": "",
        "npus": [],
        "chips": [],
        "processes": [],
        "boards": [],
    }
    if rc != 0:
        out["error"] = (table.strip() or err.strip() or f"npu-smi info exited {rc}").splitlines()[-1]
        return out
    out["processes"] = npu_smi.parse_processes(table)
    health = npu_smi.parse_table_health(table)
    rc, listing, _ = run([tool, "info", "-l"])
    out["npus"] = npu_smi.parse_list(listing)["npus"] if rc == 0 else []
    rc, mapping, _ = run([tool, "info", "-m"])
    chips = npu_smi.parse_map(mapping) if rc == 0 else []
    per_npu: dict[int, list[str]] = {}
    for row in health:
        per_npu.setdefault(row["npu_id"], []).append(row["health"])
    for chip in chips:
        seen = per_npu.get(chip["npu_id"], [])
        index = [c for c in chips if c["npu_id"] == chip["npu_id"]].index(chip)
        chip["health"] = seen[index] if index < len(seen) else None
    out["chips"] = chips
    if boards:
        for npu in out["npus"]:
            rc, text, _ = run([tool, "info", "-t", "board", "-i", str(npu["npu_id"])])
            if rc == 0:
                out["boards"].append(_board_entry(npu["npu_id"], npu_smi.parse_board(text)))
    return out


def summarise_boards(boards: list[dict[str, Any]]) -> dict[str, Any]:
    """The active versions: the value every NPU board reports, or None (and `mixed`) when they differ."""
    out: dict[str, Any] = {}
    for key in ("software_version", "firmware_version", "compatibility"):
        values = sorted({str(b[key]) for b in boards if b.get(key) not in (None, "", "NA")})
        out[key] = values[0] if len(values) == 1 else None
        out[key + "_values"] = values
    out["mixed"] = any(len(out[k + "_values"]) > 1 for k in ("software_version", "firmware_version"))
    return out


def boot_status(run: Runner, root: str) -> dict[str, Any]:
    tool = under(root, UPGRADE_TOOL)
    if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
        return {"available": False, "devices": {}, "all_booted": None, "error": f"{UPGRADE_TOOL} not found"}
    rc, text, err = run([tool, "--device_index", "-1", "--boot_status"])
    devices = npu_smi.parse_boot_status(text) if rc == 0 else {}
    error = "" if rc == 0 else (text.strip() or err.strip() or f"rc {rc}").splitlines()[-1]
    return {
        "available": True,
        "devices": {str(k): v for k, v in sorted(devices.items())},
        "all_booted": bool(devices) and all(v == npu_smi.BOOTED for v in devices.values()),
        "error": error,
    }


def device_containers(run: Runner, docker: str | None) -> dict[str, Any]:
    """Running containers given NPU device nodes (HostConfig.Devices / bind mounts of /dev/davinci*,
    davinci_manager, devmm_svm, hisi_hdc), as the driver installer's checkUserDocker finds them."""
    if not docker:
        return {"checked": False, "reason": "docker is not installed", "items": []}
    rc, ids, err = run([docker, "ps", "-q", "--no-trunc"])
    if rc != 0:
        return {"checked": False, "reason": (err.strip() or "docker ps failed").splitlines()[-1], "items": []}
    if not ids.split():
        return {"checked": True, "reason": "", "items": []}
    rc, text, err = run([docker, "inspect", *ids.split()])
    try:
        data = json.loads(text) if rc == 0 else None
    except ValueError:
        data = None
    if not isinstance(data, list):
        return {
            "checked": False,
            "reason": (err.strip() or "docker inspect failed").splitlines()[-1],
            "items": [],
        }
    items = []
    for c in data:
        host = c.get("HostConfig") or {}
        paths = [d.get("PathOnHost", "") for d in host.get("Devices") or []]
        paths += [m.get("Source", "") for m in c.get("Mounts") or []]
        nodes = sorted({p for p in paths if DEVICE_NODE.match(p or "")})
        if nodes:
            items.append(
                {
                    "id": str(c.get("Id", ""))[:12],
                    "name": str(c.get("Name", "")).lstrip("/"),
                    "image": (c.get("Config") or {}).get("Image"),
                    "devices": nodes,
                }
            )
    return {"checked": True, "reason": "", "items": items}


def device_holders(root: str, proc: str = "/proc") -> dict[str, Any]:
    """Processes with an open file descriptor on an NPU device node, found as the driver installer's
    checkUserProcess finds them (every /proc/<pid>/fd link; scripts/package/custom/driver/common/scripts/
    common.sh in github.com/verylucky01/driver): the installer refuses to upgrade while one runs ("The davinci
    nodes are occupied by some processes"). Nodes are matched under root (a test tree's dev/)."""
    prefix = under(root, "/").rstrip("/")
    items = []
    try:
        pids = [name for name in os.listdir(proc) if name.isdigit()]
    except OSError as exc:
        return {"checked": False, "reason": f"{proc} is not readable ({exc.strerror})", "items": []}
    me = str(os.getpid())
    for pid in pids:
        if pid == me:
            continue
        fd_dir = os.path.join(proc, pid, "fd")
        try:
            fds = os.listdir(fd_dir)
        except OSError:  # gone, or not ours to read
            continue
        nodes = set()
        for fd in fds:
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                continue
            if prefix and not target.startswith(prefix + "/"):
                continue
            node = target[len(prefix):] if prefix else target
            if DEVICE_NODE.match(node):
                nodes.add(node)
        if nodes:
            cmdline = read_text("/", os.path.join(proc, pid, "cmdline")) or ""
            items.append(
                {
                    "pid": int(pid),
                    "comm": (read_text("/", os.path.join(proc, pid, "comm")) or "").strip(),
                    "cmdline": " ".join(cmdline.split("\0")).strip(),
                    "nodes": sorted(nodes),
                }
            )
    return {"checked": True, "reason": "", "items": sorted(items, key=lambda i: i["pid"])}
