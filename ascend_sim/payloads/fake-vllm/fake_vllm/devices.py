"""NPU visibility check: ASCEND_RT_VISIBLE_DEVICES against the /dev/davinci* the container was given.

As in the vllm-ascend docs, a serving container gets ``--device /dev/davinciN`` for the NPUs of its replica
plus the management devices (``/dev/davinci_manager``, ``/dev/devmm_svm``, ``/dev/hisi_hdc``).

Which IDs ``ASCEND_RT_VISIBLE_DEVICES`` takes inside such a container: the container's LOGICAL device IDs,
0..n-1 over the n ``/dev/davinciN`` it was given in ascending N, not the host's physical N. Sources:
- CANN runtime API, "Relationships Between the User Device ID, Logical Device ID, and Physical Device ID"
  (aclrtGetPhyDevIdByLogicDevId, hiascend.com CANNCommunityEdition API runtimeapi aclcppdevg_03_2060): "In
  a non-container scenario, the physical device ID is the same as the logical device ID"; in the container
  example ASCEND_RT_VISIBLE_DEVICES=1,2 are logical IDs and "the logical device ID 1 in the container is
  mapped to the physical device ID 6".
- CANN environment variable reference (envref_07_0028): "Device ID indicates the logical ID of the Ascend
  AI Processor"; IDs outside the visible range are invalid.
- A container given 2 NPUs refusing a physical index (gpustack/gpustack#3352): "set
  ASCEND_RT_VISIBLE_DEVICES:4 error, input data rang[0-2)", then "open device 0 failed, runtime result =
  107001".
So the fake maps mask entry i to the i-th given device (what npu-smi's process table shows, physical) and
refuses an entry >= the number of devices given. It also refuses an empty or malformed mask and a number of
NPUs other than tensor-parallel x pipeline-parallel x data-parallel-size-local (docs/simulator.md, "Device
visibility"). The device directory is ``$FAKE_VLLM_DEV_DIR`` (tests) or ``/dev``.

The driver mounts are checked like the runtime's library loading: ``<driver>/lib64`` must be a directory
and ``<driver>/version.info`` a file, ``<driver>`` being ``$FAKE_VLLM_DRIVER_DIR`` or
``/usr/local/Ascend/driver`` (``FAKE_VLLM_SKIP_DRIVER_CHECK=1`` skips this).
"""

from __future__ import annotations

import re
from pathlib import Path

MANAGEMENT_DEVICES = ("davinci_manager", "devmm_svm", "hisi_hdc")
DEFAULT_DRIVER_DIR = Path("/usr/local/Ascend/driver")


class DeviceError(Exception):
    where = "vllm-ascend/vllm_ascend/worker/worker.py"

    def __init__(self, exc_type: str, message: str) -> None:
        super().__init__(message)
        self.exc_type = exc_type
        self.message = message


def given_devices(dev_dir: Path) -> list[int]:
    """Indices N of the /dev/davinciN present in ``dev_dir``."""
    found = []
    for entry in dev_dir.glob("davinci*"):
        match = re.fullmatch(r"davinci(\d+)", entry.name)
        if match:
            found.append(int(match.group(1)))
    return sorted(found)


def parse_mask(mask: str | None) -> list[int]:
    if mask is None or not mask.strip():
        raise DeviceError(
            "RuntimeError",
            "ASCEND_RT_VISIBLE_DEVICES is not set or empty: the simulated server needs the replica's NPU "
            "mask (e.g. ASCEND_RT_VISIBLE_DEVICES=0,1,2,3)",
        )
    devices: list[int] = []
    for raw in mask.split(","):
        token = raw.strip()
        if not token.isdigit():
            raise DeviceError(
                "RuntimeError", f"ASCEND_RT_VISIBLE_DEVICES={mask}: '{token}' is not an NPU index"
            )
        if int(token) in devices:
            raise DeviceError(
                "RuntimeError", f"ASCEND_RT_VISIBLE_DEVICES={mask}: NPU {token} is listed twice"
            )
        devices.append(int(token))
    return devices


def check_devices(mask: str | None, dev_dir: Path, needed: int | None, needed_why: str) -> list[int]:
    """The physical NPU indices the mask selects (logical ID i = the i-th /dev/davinciN given, see the module
    docstring), or :class:`DeviceError` naming the mask and the problem. ``needed`` None: any number (a Ray
    driver's node offers its NPUs to the cluster; Ray counts the world)."""
    logical = parse_mask(mask)
    given = given_devices(dev_dir)
    shown = ", ".join(f"davinci{n}" for n in given) or "none"
    for n in logical:
        if n >= len(given):
            acl = (
                f"set ASCEND_RT_VISIBLE_DEVICES:{n} error, input data rang[0-{len(given)}). "
                f"open device {n} failed, runtime result = 107001."
            )
            hint = (
                f"Inside a container the mask takes logical IDs 0..{max(len(given) - 1, 0)} of the "
                "/dev/davinciN given (--device), not the host's N."
            )
            raise DeviceError(
                "RuntimeError",
                f"ASCEND_RT_VISIBLE_DEVICES={mask} names NPU {n}, but this container was given "
                f"{len(given)} NPU(s) ({shown}): {acl} {hint}",
            )
    devices = [given[n] for n in logical]
    for name in MANAGEMENT_DEVICES:
        if not (dev_dir / name).exists():
            raise DeviceError(
                "RuntimeError",
                f"{dev_dir}/{name} is missing: the container needs --device /dev/davinci_manager "
                "--device /dev/devmm_svm --device /dev/hisi_hdc besides the NPUs "
                f"(ASCEND_RT_VISIBLE_DEVICES={mask}). drvMngGetConsoleLogLevel failed, aclInit error 507033",
            )
    if needed is not None and len(devices) != needed:
        raise DeviceError(
            "RuntimeError",
            f"ASCEND_RT_VISIBLE_DEVICES={mask} makes {len(devices)} NPU(s) visible, but {needed_why} = "
            f"{needed} are needed: the mask must select exactly the replica's NPUs on this node",
        )
    return devices


def check_driver(driver_dir: Path) -> None:
    lib64 = driver_dir / "lib64"
    if not lib64.is_dir():
        raise DeviceError(
            "ImportError",
            f"libascend_hal.so: cannot open shared object file: No such file or directory "
            f"(mount {lib64}/ and {driver_dir}/version.info from the host)",
        )
    if not (driver_dir / "version.info").is_file():
        raise DeviceError(
            "RuntimeError",
            f"{driver_dir}/version.info not found: the driver version cannot be read "
            "(mount it from the host)",
        )
