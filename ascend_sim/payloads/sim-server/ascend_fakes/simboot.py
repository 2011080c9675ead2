"""Boot-time and cross-server state of the simulated Ascend host: device nodes, pending.json, the fabric
mirror (python3 standard library only; formats in simstate.py's docstring)."""

from __future__ import annotations

import os
import re
import stat
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ascend_fakes import hccn_state, simstate
else:
    import hccn_state
    import simstate

# ------------------------------------------------------------------------------------ devices, pending


def device_node_names(count: int) -> list[str]:
    return [f"davinci{i}" for i in range(count)] + list(simstate.EXTRA_NODES)


def ensure_device_nodes(count: int) -> list[str]:
    """Create /dev/davinci0..count-1 and the manager nodes as char devices 1:3 (/dev/null's numbers), so
    containers given --device can open them. Under a test root, or where mknod is not permitted, regular
    placeholder files are created instead; the returned note says so."""
    placeholders: list[str] = []
    why = f"mknod skipped under ASCEND_SIM_ROOT={simstate.root()}"
    for name in device_node_names(count):
        real = simstate.p(f"/dev/{name}")
        if os.path.lexists(real):
            continue
        os.makedirs(os.path.dirname(real), exist_ok=True)
        if not simstate.under_test_root():
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
    for name in os.listdir(simstate.p("/dev")) if os.path.isdir(simstate.p("/dev")) else []:
        if re.fullmatch(r"davinci[0-9]+", name) or name in simstate.EXTRA_NODES:
            simstate.remove(f"/dev/{name}")


def add_pending(kind: str, version: str, package: str, files: dict[str, str]) -> None:
    data = simstate.read_json(simstate.PENDING_JSON, {})
    data = data if isinstance(data, dict) else {}
    data[kind] = {"version": version, "package": package, "files": files}
    simstate.write_json(simstate.PENDING_JSON, data)


def apply_pending(kinds: tuple[str, ...] = ("driver", "firmware")) -> list[str]:
    """What a reboot does: pending versions become active. Returns the kinds applied."""
    data = simstate.read_json(simstate.PENDING_JSON, {})
    data = data if isinstance(data, dict) else {}
    done = []
    for kind in kinds:
        entry = data.pop(kind, None)
        if isinstance(entry, dict):
            for path, content in (entry.get("files") or {}).items():
                simstate.write_text(
                    str(path), str(content), 0o444 if path.endswith("version.info") else 0o644
                )
            done.append(kind)
    if data:
        simstate.write_json(simstate.PENDING_JSON, data)
    else:
        simstate.remove(simstate.PENDING_JSON)
    if "driver" in done:
        on_boot()
    return done


def on_boot() -> None:
    """At every (simulated) boot: an installed driver's device nodes exist, the driver has applied
    /etc/hccn.conf to the NPU NICs (hccn_state.boot), the fabric mirror is fresh."""
    hw = simstate.load_hardware()
    if hw is None:
        return
    if simstate.driver_version():
        ensure_device_nodes(hw.total)
    hccn_state.boot(hw)
    sync_fabric(hw)


# ---------------------------------------------------------------------------------------------- fabric


def fabric_file(server: str) -> str:
    return f"{simstate.FABRIC_DIR}/{server}.json"


def sync_fabric(hw: simstate.Hardware) -> dict[str, Any]:
    """Mirror this server's NPU NICs (live addresses, hccn_state; link state from faults.json) into the
    fabric. Written only when it changed: a read-only hccn_tool call leaves every file as it was."""
    live = hccn_state.devices(hw) if simstate.driver_version() else {}
    entries = {
        str(d.logic_id): {
            "address": live.get(d.logic_id, {}).get("address", ""),
            "netmask": live.get(d.logic_id, {}).get("netmask", ""),
            "gateway": live.get(d.logic_id, {}).get("gateway", ""),
            "link": "UP" if simstate.link_up(d.logic_id) else "DOWN",
        }
        for d in hw.devices
    }
    path = fabric_file(hw.server)
    with simstate.locked(path):
        if simstate.read_json(path) != entries:
            simstate.write_json(path, entries)
    return entries


def fabric() -> dict[str, dict[str, Any]]:
    """Every server's NIC mirror: {server: {"<logical id>": entry}}."""
    out: dict[str, dict[str, Any]] = {}
    base = simstate.p(simstate.FABRIC_DIR)
    for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        if name.endswith(".json"):
            path = f"{simstate.FABRIC_DIR}/{name}"
            with simstate.locked(path, shared=True):
                data = simstate.read_json(path, {})
            if isinstance(data, dict):
                out[name[: -len(".json")]] = data
    return out


def main(argv: list[str]) -> int:
    """`simboot.py apply-pending | on-boot | sync-fabric`: what ascend-sim-init and `sim fault` run."""
    cmd = argv[0] if argv else ""
    if cmd == "apply-pending":
        print(" ".join(apply_pending()) or "nothing pending")
    elif cmd == "on-boot":
        on_boot()
    elif cmd == "sync-fabric":
        hw = simstate.load_hardware()
        if hw is None:
            print(f"no {simstate.HARDWARE_JSON}", file=sys.stderr)
            return 1
        sync_fabric(hw)
    else:
        print("usage: simboot.py apply-pending | on-boot | sync-fabric", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
