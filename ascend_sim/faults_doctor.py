"""`sim fault` faults for the live doctor's checks (orchestrator/doctor/live_*.py) that the older faults do
not cover. Each keeps what it moved or replaced under /var/lib/ascend-sim/doctor/ so `--clear` (and `sim
fault clear`) puts it back:

- driver-unloaded: /dev/davinci_manager is moved away; the NPUs stay on the PCI bus (the simulated sysfs)
  but npu-smi fails as without a loaded driver ("dcmi module initialize failed. ret is -8005", the fake
  npu-smi's message from npucli's source);
- version-info: the driver's version.info is moved away (missing);
- firmware-version: the firmware's version.info names another version (what npu-smi -t board shows too);
- npu-held: a container that is not a replica is given /dev/davinciN (the dcmi -8005 case of a replica).
"""

from __future__ import annotations

import shlex

from ascend_sim.engine import SimError
from ascend_sim.faults import STATE, Server, clear_all

AWAY = f"{STATE}/doctor"
MANAGER = "/dev/davinci_manager"
DRIVER_INFO = "/usr/local/Ascend/driver/version.info"
FIRMWARE_INFO = "/usr/local/Ascend/firmware/version.info"
HOLDER = "ascend-sim-npu-holder"


def _move_away(srv: Server, path: str, clear: bool) -> None:
    kept = f"{AWAY}/{path.strip('/').replace('/', '_')}"
    if clear:
        srv.sh("sh", "-c", f"if [ -e {kept} ]; then mv {kept} {path}; fi")
    else:
        srv.sh(
            "sh", "-c", f"mkdir -p {AWAY} && if [ -e {path} ] && [ ! -e {kept} ]; then mv {path} {kept}; fi"
        )


def driver_unloaded(srv: Server, clear: bool) -> str:
    _move_away(srv, MANAGER, clear)
    if clear:
        return f"{srv.info.name}: NPU driver loaded again ({MANAGER} is back)"
    return f"{srv.info.name}: NPU driver not loaded: NPUs on the PCI bus, npu-smi fails"


def version_info(srv: Server, clear: bool) -> str:
    _move_away(srv, DRIVER_INFO, clear)
    return f"{srv.info.name}: {DRIVER_INFO} {'is back' if clear else 'is missing'}"


def firmware_version(srv: Server, version: str | None, clear: bool) -> str:
    kept = f"{AWAY}/firmware-version.info"
    if clear:
        srv.sh("sh", "-c", f"if [ -e {kept} ]; then mv {kept} {FIRMWARE_INFO}; fi")
        return f"{srv.info.name}: firmware version.info restored"
    if not version:
        raise SimError("No firmware version given. Fix: add --version V (e.g. 7.7.0.1.231).")
    v = shlex.quote(version)
    script = (
        f"test -f {FIRMWARE_INFO} || {{ echo 'no installed firmware (apply the drivers phase)'; exit 1; }}; "
        f"mkdir -p {AWAY}; [ -e {kept} ] || cp -p {FIRMWARE_INFO} {kept}; "
        f"sed -i 's/^Version=.*/Version='{v}'/' {FIRMWARE_INFO}"
    )
    srv.sh("sh", "-c", script)
    return f"{srv.info.name}: firmware now reports version {version}"


def npu_held(srv: Server, device: int, clear: bool) -> str:
    if clear:
        srv.sh("sh", "-c", f"docker rm -f {HOLDER} >/dev/null 2>&1 || true")
        return f"{srv.info.name}: no container holds an NPU besides the replicas"
    node = f"/dev/davinci{int(device)}"
    script = (
        f"test -e {node} || {{ echo '{node} does not exist (driver not installed?)'; exit 1; }}; "
        "image=$(docker images --format '{{.Repository}}:{{.Tag}}' | grep -v '<none>' | head -1); "
        "test -n \"$image\" || { echo 'no image in the server to run'; exit 1; }; "
        f"if [ -c {node} ]; then give='--device {node}'; else give='-v {node}:{node}'; fi; "
        f"docker rm -f {HOLDER} >/dev/null 2>&1; "
        f'docker run -d --name {HOLDER} --entrypoint sleep $give "$image" infinity >/dev/null'
    )
    srv.sh("sh", "-c", script)
    return f"{srv.info.name}: container {HOLDER} holds {node}"


def clear_everything(srv: Server) -> str:
    """`sim fault clear`: the older faults and these."""
    msg = clear_all(srv)
    for path in (MANAGER, DRIVER_INFO):
        _move_away(srv, path, clear=True)
    firmware_version(srv, None, clear=True)
    npu_held(srv, 0, clear=True)
    return msg
