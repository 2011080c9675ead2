"""Simulated Ascend HDK driver/firmware `.run` packages (controller side).

A package is what a makeself archive is: a shell header, the line `__ARCHIVE__`, then a gzip tar payload.
The header verifies the payload's SHA256 (embedded at build time), extracts it to a temp dir and runs the
payload's installer (payloads/sim-server/ascend_fakes/installer.py) with the remaining options. Names, options
and console lines are the real ones (the Ascend HDK installation guide on hiascend.com, public install logs,
github.com/verylucky01/driver's install scripts). The payload carries the fake tools, so a driver install
puts npu-smi, hccn_tool and upgrade-tool on the server.

Builds are reproducible (fixed mtimes and owners, gzip mtime 0): the same arguments give the same bytes.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import tarfile
from pathlib import Path
from typing import Literal

from orchestrator.catalog.chips import chips_of_family
from orchestrator.catalog.hdk import driver_table, firmware_line
from orchestrator.catalog.matrix import driver_series
from orchestrator.catalog.ranges import parse_ranges
from orchestrator.catalog.version import Version

Kind = Literal["driver", "firmware"]
ChipFamily = Literal["910b", "910_93", "310p"]
TakesEffect = Literal["immediately", "reboot"]

FAKES_DIR = Path(__file__).resolve().parent / "payloads" / "sim-server" / "ascend_fakes"
MARKER = "__ARCHIVE__"
DEFAULT_FW_RANGE = ("7.0.0", "7.8.99")  # drivers the catalog does not know accept this firmware range
DEFAULT_DRV_RANGE = ("23.0.0", "26.9.")  # firmware no catalog driver accepts: any driver 23.0.0 .. 26.9.x
_VERSION = re.compile(r"[0-9][0-9A-Za-z]*(\.[0-9A-Za-z]+)*")

# The makeself part of --help (no public capture; the option list is the HDK installation guide's) followed
# by the driver's own help.info (verylucky01/driver scripts/package/custom/driver/common/scripts/help.info).
_HELP_MAKESELF = """Usage: {name} [options]
Options:
  --help | -h                       Print this message
  --info                            Print embedded info : title, default target directory, embedded script ...
  --list                            Print the list of files in the archive
  --check                           Checks integrity and version dependency of the archive
  --quiet                           Quiet install mode, skip human-computer interactions
  --nox11                           Do not spawn an xterm
  --noexec                          Do not run embedded script
  --extract=<path>                  Extract directly to a target directory (absolute or relative)
                                    Usually used with --noexec to just extract files without running"""
_HELP_DRIVER = """  --full                            Install full mode
  --run                             Install run mode
  --devel                           Install devel mode
  --docker                          Install docker mode
  --upgrade                         Upgrade product immediately
  --install-path=<path>             Install to specific dir
  --install-username=<username>     Install to specific username
  --install-usergroup=<usergroup>   Install to specific usrgroup
  --uninstall                       Uninstall product
  --version                         Query the package version
  --install-for-all                 Install for all user
  --force                           Install and take effect later
  --norebuild                       Forcibly no kernel module rebuild"""
_HELP_FIRMWARE = """  --full                            Install full mode
  --run                             Install run mode
  --upgrade                         Upgrade product immediately
  --uninstall                       Uninstall product
  --version                         Query the package version"""

_HEADER = r"""#!/bin/sh
# Simulated Ascend HDK package ({package}), a makeself-style self-extracting archive built by
# ascend_sim.packages: this POSIX sh header, a line "__ARCHIVE__", then a gzip tar payload.
label="{label}"
skip={skip}
sha256="{sha256}"
umask 022
print_help() {{
cat <<'ASCEND_SIM_HELP'
{help}
ASCEND_SIM_HELP
}}
quiet=n; check=n; noexec=n; info=n; list=n; extract=""
n=$#
while [ "$n" -gt 0 ]; do
  a=$1; shift; n=$((n - 1))
  case "$a" in
    -h|--help) print_help; exit 0 ;;
    --info) info=y ;;
    --list) list=y ;;
    --nox11) ;;
    --noexec) noexec=y ;;
    --extract=*) extract="${{a#--extract=}}" ;;
    --check) check=y; set -- "$@" "$a" ;;
    --quiet) quiet=y; set -- "$@" "$a" ;;
    *) set -- "$@" "$a" ;;
  esac
done
payload() {{ tail -n +"$skip" "$0"; }}
verify() {{
  actual=$(payload | sha256sum | cut -d' ' -f1)
  if [ "$actual" != "$sha256" ]; then
    echo "Verifying archive integrity...Error in SHA256 checksums: $actual is different from $sha256" >&2
    exit 2
  fi
  [ "$quiet" = y ] || echo "Verifying archive integrity...  100%   SHA256 checksums are OK. All good."
}}
if [ "$info" = y ]; then
  echo "Identification: $label"
  echo "Target directory: {package_dir}"
  echo "Uncompressed size: {size_kb} KB"
  echo "Compression: gzip"
  echo "Date of packaging: 1970-01-01 00:00:00"
  echo "Script run after extraction:"
  echo "     ./ascend-sim/installer.py"
  exit 0
fi
if [ "$list" = y ]; then
  echo "Target directory: {package_dir}"
  payload | tar tzvf -
  exit $?
fi
if [ "$check" = y ]; then
  [ "$quiet" = y ] || echo "Makeself logfile: ${{HOME:-/root}}/log/makeself/makeself.log"
  verify
fi
verify
if [ -n "$extract" ]; then
  mkdir -p "$extract" && payload | tar xzf - -C "$extract" || exit 1
  [ "$noexec" = y ] && exit 0
  dir="$extract"
else
  dir=$(mktemp -d "${{TMPDIR:-/tmp}}/selfgz.XXXXXX") || exit 1
  trap 'rm -rf "$dir"' EXIT
  payload | tar xzf - -C "$dir" || {{ echo "Extraction failed." >&2; exit 1; }}
  [ "$noexec" = y ] && exit 0
fi
[ "$quiet" = y ] || echo "Uncompressing $label  100%  "
command -v python3 >/dev/null 2>&1 || {{ echo "python3 is required by the simulated package" >&2; exit 1; }}
ASCEND_SIM_RUNFILE="$0" ASCEND_SIM_PKGDIR="$dir" python3 "$dir/ascend-sim/installer.py" "$@"
exit $?
"""


def package_name(kind: Kind, chip_family: ChipFamily, version: str, arch: str = "aarch64") -> str:
    """The real file name: Ascend-hdk-910b-npu-driver_<ver>_linux-<arch>.run,
    Ascend-hdk-910b-npu-firmware_<ver>.run, Atlas-A3-hdk-npu-..., Ascend-hdk-310p-npu-... (the catalog's
    driver_package_prefix)."""
    if not _VERSION.fullmatch(version):
        raise ValueError(f"invalid package version {version!r}, e.g. 25.0.rc1.1 or 7.7.0.1.231")
    prefix = chips_of_family(chip_family)[0].driver_package_prefix
    if kind == "driver":
        return f"{prefix}-npu-driver_{version}_linux-{arch}.run"
    return f"{prefix}-npu-firmware_{version}.run"


def _label(kind: Kind, chip_family: ChipFamily) -> str:
    """makeself label: "ASCEND DRIVER RUN PACKAGE" (6b, 910B and 310P), "ASCEND-HDK-910B-NPU FIRMWARE RUN
    PACKAGE" (6a/6c); the A3 firmware label follows the same pattern from its package prefix."""
    if kind == "driver":
        return "ASCEND DRIVER RUN PACKAGE"
    return f"{chips_of_family(chip_family)[0].driver_package_prefix.upper()}-NPU FIRMWARE RUN PACKAGE"


def _digits(text: str, salt: str, n: int) -> int:
    value: int = int(hashlib.sha256(f"{salt}:{text}".encode()).hexdigest(), 16) % 10**n
    return value


def firmware_drivers(version: str) -> tuple[str, str]:
    """(compatible_version_drv, package_version) of a firmware's version.info.

    A firmware the catalog has a version.info for (hdk.yaml `firmware`) gets its verbatim range. Any other
    firmware lists, in the real file's `[series,series.]` form, every catalog driver series whose
    compatible_version_fw accepts it (the driver side's view, mirrored). package_version is the driver the
    catalog saw installed with it (known_pairs), else the newest accepting series."""
    line = firmware_line(version)
    if line is not None:
        return str(line.compatible_version_drv), line.package_version
    series = [s for s in driver_table() if s.compatible_version_fw.accepts(version)]
    pairs = [d for s in series for d, fw in s.known_pairs if Version(fw) == Version(version)]
    lo, hi = DEFAULT_DRV_RANGE
    ranges = ",".join(f"[{s.series},{s.series}.]" for s in series) or f"[{lo},{hi}]"
    package = pairs[0] if pairs else (series[-1].series if series else version)
    return ranges, package


def version_info(kind: Kind, version: str, compatible: str | None = None) -> str:
    """The package's version.info with the real keys (the HDK installation guide;
    tests/fixtures/ascend/version_info/): the driver's compatible_version_fw from the catalog series, the
    firmware's compatible_version_drv (firmware_drivers). `compatible` overrides the range (tests build
    packages that refuse each other)."""
    if kind == "firmware":
        drv_range, package = firmware_drivers(version)
        return (
            f"Version={version}\n"
            "firmware_version=1.0\n"
            f"package_version={package}\n"
            f"compatible_version_drv={compatible or drv_range}\n"
        )
    series = driver_series(version)
    lo, hi = (series.firmware_min, series.firmware_max) if series else DEFAULT_FW_RANGE
    c, spc, b = _digits(version, "c", 2), _digits(version, "spc", 3), _digits(version, "b", 3)
    inner = f"V100R001C{c:02d}SPC{spc:03d}B{b:03d}"
    return (
        f"Version={version}\n"
        f"ascendhal_version=7.35.{_digits(version, 'hal', 2)}\n"
        f"Innerversion={inner}\n"
        f"compatible_version_fw={compatible or f'[{lo},{hi}]'}\n"
        f"package_version={version}\n"
    )


def _add(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    tar.addfile(info, io.BytesIO(data))


def _payload(manifest: dict[str, object], version_text: str) -> tuple[bytes, int]:
    raw = io.BytesIO()
    size = 0
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        files = [
            ("package.json", (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode(), 0o644),
            ("version.info", version_text.encode(), 0o644),
        ]
        files += [
            (f"ascend-sim/{p.name}", p.read_bytes(), 0o755)
            for p in sorted(FAKES_DIR.glob("*.py"))
            if p.name != "__init__.py"
        ]
        for name, data, mode in files:
            _add(tar, name, data, mode)
            size += len(data)
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    return buf.getvalue(), size


def build_package(
    kind: Kind,
    chip_family: ChipFamily,
    version: str,
    out_dir: Path,
    *,
    arch: str = "aarch64",
    takes_effect: TakesEffect = "immediately",
    fail: bool = False,
    compatible: str | None = None,
) -> Path:
    """Write the simulated `.run` into out_dir and return its path.

    takes_effect: "immediately" (hot reset works: the new version is active at once, rc 0) or "reboot" (it
    goes to /var/lib/ascend-sim/pending.json; a driver install then exits 2). fail=True makes the install fail
    (a driver: DKMS failure; a firmware: upgrade failure). compatible replaces the version.info range the
    other side is checked against (compatible_version_fw of a driver, compatible_version_drv of a firmware);
    such a package is written to the name the real one has, so keep it in its own out_dir."""
    if kind not in ("driver", "firmware"):
        raise ValueError(f"kind must be 'driver' or 'firmware', got {kind!r}")
    if chip_family not in ("910b", "910_93", "310p"):
        raise ValueError(f"chip_family must be 910b, 910_93 or 310p, got {chip_family!r}")
    if takes_effect not in ("immediately", "reboot"):
        raise ValueError(f"takes_effect must be 'immediately' or 'reboot', got {takes_effect!r}")
    if not re.fullmatch(r"[A-Za-z0-9_]+", arch):
        raise ValueError(f"invalid arch {arch!r}, e.g. aarch64 or x86_64")
    name = package_name(kind, chip_family, version, arch)
    manifest: dict[str, object] = {
        "kind": kind,
        "chip_family": chip_family,
        "version": version,
        "arch": arch,
        "takes_effect": takes_effect,
        "fail": fail,
        "package": name,
    }
    if compatible is not None:
        parse_ranges(compatible)  # ValueError names a malformed range
        manifest["compatible"] = compatible
    payload, size = _payload(manifest, version_info(kind, version, compatible))
    help_text = "\n".join(
        [_HELP_MAKESELF.format(name=f"./{name}"), _HELP_DRIVER if kind == "driver" else _HELP_FIRMWARE]
    )
    fields = {
        "package": name,
        "label": _label(kind, chip_family),
        "sha256": hashlib.sha256(payload).hexdigest(),
        "help": help_text,
        "package_dir": name.removesuffix(".run"),
        "size_kb": max(1, size // 1024),
    }
    header = _HEADER.format(skip=0, **fields)
    skip = header.count("\n") + 2  # the payload starts on the line after the marker
    header = _HEADER.format(skip=skip, **fields)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / name
    tmp = path.with_name(f".{name}.tmp")
    tmp.write_bytes(header.encode() + f"{MARKER}\n".encode() + payload)
    tmp.chmod(0o755)
    tmp.replace(path)
    return path


def sha256_of(path: Path) -> str:
    """Hex SHA256 of a file (what site.yaml records for a package source)."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
