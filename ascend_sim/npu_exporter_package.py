"""Simulated MindCluster npu-exporter package (controller side): a zip named as Huawei's release asset
(`Ascend-mindxdl-npu-exporter_<version>_linux-<arch>.zip`, MindCluster's npu-exporter installation docs,
"Download") holding the `npu-exporter` binary at its top level, as the real zip does. The binary is the
simulator's fake (payloads/sim-server/ascend_fakes/npu_exporter.py): a python3 HTTP server that serves the
npu_chip_info_* metrics of the simulated chips. Same arguments, same bytes (fixed zip timestamps), so the
spec's sha256 stays valid across `sim up` runs."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from ascend_sim.images import FAKES_DIR

VERSION = "7.1.0"
BINARY = "npu-exporter"
_SOURCE = FAKES_DIR / "npu_exporter.py"
_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can carry


def package_name(version: str, arch: str) -> str:
    return f"Ascend-mindxdl-npu-exporter_{version}_linux-{arch}.zip"


def build_npu_exporter_package(out_dir: Path, *, version: str = VERSION, arch: str = "aarch64") -> Path:
    """Write the simulated zip into out_dir (only when its bytes change) and return its path."""
    if not re.fullmatch(r"[0-9][0-9A-Za-z.]*", version) or not re.fullmatch(r"[A-Za-z0-9_]+", arch):
        raise ValueError(f"invalid version {version!r} or arch {arch!r}, e.g. 7.1.0 and aarch64")
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / package_name(version, arch)
    tmp = path.with_suffix(".zip.tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        info = zipfile.ZipInfo(BINARY, date_time=_EPOCH)
        info.external_attr = (0o100755 & 0xFFFF) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        zf.writestr(info, _SOURCE.read_bytes())
    if path.is_file() and path.read_bytes() == tmp.read_bytes():
        tmp.unlink()
    else:
        tmp.replace(path)
    return path
