"""NPU visibility check: ASCEND_RT_VISIBLE_DEVICES against the /dev/davinci* the container was given.

As in the vllm-ascend docs, a serving container gets ``--device /dev/davinciN`` for the NPUs of its server
plus the management devices (``/dev/davinci_manager``, ``/dev/devmm_svm``, ``/dev/hisi_hdc``), and
``ASCEND_RT_VISIBLE_DEVICES`` selects the replica's NPUs by physical index. The fake server refuses to start
when the mask is empty or malformed, names a device the container was not given, or has a different number
of NPUs than tensor-parallel x pipeline-parallel x data-parallel-size-local (docs/simulator.md, "Device
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
    """The visible physical NPU indices, or :class:`DeviceError` naming the mask and the problem. ``needed``
    None: any number (a Ray driver's node offers its NPUs to the cluster; Ray counts the world)."""
    devices = parse_mask(mask)
    given = given_devices(dev_dir)
    shown = ", ".join(f"davinci{n}" for n in given) or "none"
    for n in devices:
        if n not in given:
            raise DeviceError(
                "RuntimeError",
                f"ASCEND_RT_VISIBLE_DEVICES={mask} names NPU {n}, but {dev_dir}/davinci{n} was not given to "
                f"this container (present: {shown}). aclrtSetDevice failed, error code is 107001: invalid "
                f"device id. Pass --device {dev_dir}/davinci{n} or fix the mask.",
            )
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
