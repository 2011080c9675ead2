"""Boot-time and cross-server state of the simulated Ascend host: device nodes, pending.json, the fabric
mirror (python3 standard library only; formats in simstate.py's docstring)."""

from __future__ import annotations

import os
import re
import stat
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orchestrator.sim.fakes.simstate import (
        EXTRA_NODES,
        FABRIC_DIR,
        HCCN_CONF,
        PENDING_JSON,
        Hardware,
        driver_version,
        link_up,
        load_hardware,
        locked,
        p,
        read_json,
        read_kv,
        remove,
        root,
        under_test_root,
        write_json,
        write_text,
    )
else:
    from simstate import (
        EXTRA_NODES,
        FABRIC_DIR,
        HCCN_CONF,
        PENDING_JSON,
        Hardware,
        driver_version,
        link_up,
        load_hardware,
        locked,
        p,
        read_json,
        read_kv,
        remove,
        root,
        under_test_root,
        write_json,
        write_text,
    )

# ------------------------------------------------------------------------------------ devices, pending


def device_node_names(count: int) -> list[str]:
    return [f"davinci{i}" for i in range(count)] + list(EXTRA_NODES)


def ensure_device_nodes(count: int) -> list[str]:
    """Create /dev/davinci0..count-1 and the manager nodes as char devices 1:3 (/dev/null's numbers), so
    containers given --device can open them. Under a test root, or where mknod is not permitted, regular
    placeholder files are created instead; the returned note says so."""
    placeholders: list[str] = []
    why = f"mknod skipped under ASCEND_SIM_ROOT={root()}"
    for name in device_node_names(count):
        real = p(f"/dev/{name}")
        if os.path.lexists(real):
            continue
        os.makedirs(os.path.dirname(real), exist_ok=True)
        if not under_test_root():
            try:
                os.mknod(real, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
                os.chmod(real, 0o666)
                continue
            except OSError as exc:
                why = f"mknod not permitted ({exc.strerror})"
        with open(real, "w", encoding="utf-8"):
            pass
        os.chmod(real, 0o666)
        placeholders.append(f"/dev/{name}")
    if not placeholders:
        return []
    return [f"{why}: {', '.join(placeholders)} created as regular placeholder files"]


def remove_device_nodes() -> None:
    for name in os.listdir(p("/dev")) if os.path.isdir(p("/dev")) else []:
        if re.fullmatch(r"davinci[0-9]+", name) or name in EXTRA_NODES:
            remove(f"/dev/{name}")


def add_pending(kind: str, version: str, package: str, files: dict[str, str]) -> None:
    data = read_json(PENDING_JSON, {})
    data = data if isinstance(data, dict) else {}
    data[kind] = {"version": version, "package": package, "files": files}
    write_json(PENDING_JSON, data)


def apply_pending(kinds: tuple[str, ...] = ("driver", "firmware")) -> list[str]:
    """What a reboot does: pending versions become active. Returns the kinds applied."""
    data = read_json(PENDING_JSON, {})
    data = data if isinstance(data, dict) else {}
    done = []
    for kind in kinds:
        entry = data.pop(kind, None)
        if isinstance(entry, dict):
            for path, content in (entry.get("files") or {}).items():
                write_text(str(path), str(content), 0o444 if path.endswith("version.info") else 0o644)
            done.append(kind)
    if data:
        write_json(PENDING_JSON, data)
    else:
        remove(PENDING_JSON)
    if "driver" in done:
        on_boot()
    return done


def on_boot() -> None:
    """At every (simulated) boot: an installed driver's device nodes exist, the fabric mirror is fresh."""
    hw = load_hardware()
    if hw is None:
        return
    if driver_version():
        ensure_device_nodes(hw.total)
    sync_fabric(hw)


# ---------------------------------------------------------------------------------------------- fabric


def fabric_file(server: str) -> str:
    return f"{FABRIC_DIR}/{server}.json"


def sync_fabric(hw: Hardware) -> dict[str, Any]:
    """Mirror this server's NPU NICs (hccn.conf addresses + link state from faults.json) into the fabric."""
    conf = read_kv(HCCN_CONF)
    entries = {
        str(d.logic_id): {
            "address": conf.get(f"address_{d.logic_id}", ""),
            "netmask": conf.get(f"netmask_{d.logic_id}", ""),
            "gateway": conf.get(f"gateway_{d.logic_id}", ""),
            "link": "UP" if link_up(d.logic_id) else "DOWN",
        }
        for d in hw.devices
    }
    path = fabric_file(hw.server)
    with locked(path):
        write_json(path, entries)
    return entries


def fabric() -> dict[str, dict[str, Any]]:
    """Every server's NIC mirror: {server: {"<logical id>": entry}}."""
    out: dict[str, dict[str, Any]] = {}
    base = p(FABRIC_DIR)
    for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        if name.endswith(".json"):
            path = f"{FABRIC_DIR}/{name}"
            with locked(path, shared=True):
                data = read_json(path, {})
            if isinstance(data, dict):
                out[name[: -len(".json")]] = data
    return out
