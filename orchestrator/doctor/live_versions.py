"""Live checks of the installed versions: `version-files` (driver version.info and /etc/ascend_install.info
present and readable), `driver-version` / `firmware-version` (installed and active vs the spec) and
`driver-firmware` (the pair's Compatibility, both directions of the version.info files, and the catalog's
table: orchestrator/catalog/data/hdk.yaml).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orchestrator.catalog import pair_problem
from orchestrator.catalog.version import Version
from orchestrator.doctor.live_finding import Facts, Finding, LiveCheck, Status, expect, npu

FIX_FILES = (
    "reinstall the driver (`orchestrator apply SITE --phases drivers`); a file that exists but cannot be "
    "read needs its permissions back (`chmod 644`, owner root) - the CANN toolkit and torch_npu read it"
)
FIX_VERSION = (
    "install the spec's version: `orchestrator apply SITE --phases drivers`; when version.info already has "
    "it but npu-smi reports the old one, reboot the server to activate it"
)
FIX_PAIR = (
    "install a driver and firmware that accept each other (their version.info compatible_version_fw / "
    "compatible_version_drv; docs/spec.md software section), then run `orchestrator apply SITE --phases "
    "drivers`"
)


def _file(host: str, what: str, info: Mapping[str, Any]) -> Finding | None:
    path = info.get("path") or what
    if info.get("present") is False:
        return Finding(host, "version-files", Status.fail, f"{path} is missing", FIX_FILES)
    if info.get("readable") is False:
        return Finding(host, "version-files", Status.fail, f"{path} exists but cannot be read", FIX_FILES)
    return None


def check_files(host: str, facts: Facts) -> list[Finding]:
    got = npu(facts)
    driver = got.get("driver") or {}
    bad = [
        f
        for f in (
            _file(host, "/usr/local/Ascend/driver/version.info", driver),
            _file(host, "/etc/ascend_install.info", got.get("install_info_file") or {}),
        )
        if f is not None
    ]
    if bad:
        return bad
    if not driver.get("installed"):
        return [
            Finding(host, "version-files", Status.fail, f"{driver.get('path')} names no Version=", FIX_FILES)
        ]
    return [Finding(host, "version-files", Status.ok, f"driver version.info says {driver.get('version')}")]


def _same(a: Any, b: Any) -> bool:
    """Versions by meaning, as validation and the roles compare them (the portal's 25.0.RC1 is the
    25.0.rc1 that version.info and npu-smi print)."""
    if a is None or b is None:
        return a is None and b is None
    try:
        return Version(str(a)) == Version(str(b))
    except ValueError:
        return str(a) == str(b)


def _version(host: str, name: str, want: Any, installed: Any, active: Any) -> Finding:
    if want is None:
        return Finding(host, name, Status.ok, f"installed {installed}, active {active} (the spec names none)")
    seen = f"the spec wants {want}; installed {installed or 'none'}, active {active or 'unknown'}"
    if not _same(installed, want) or (active is not None and not _same(active, want)):
        return Finding(host, name, Status.fail, seen, FIX_VERSION)
    return Finding(host, name, Status.ok, seen)


def check_versions(host: str, facts: Facts) -> list[Finding]:
    exp, got = expect(facts), npu(facts)
    active = got.get("active") or {}
    firmware_installed = (got.get("firmware") or {}).get("version") or active.get("firmware_version")
    return [
        _version(
            host,
            "driver-version",
            exp.get("driver"),
            (got.get("driver") or {}).get("version"),
            active.get("software_version"),
        ),
        _version(
            host, "firmware-version", exp.get("firmware"), firmware_installed, active.get("firmware_version")
        ),
    ]


def check_pair(host: str, facts: Facts) -> list[Finding]:
    got = npu(facts)
    active = got.get("active") or {}
    driver = (got.get("driver") or {}).get("version")
    firmware = active.get("firmware_version") or (got.get("firmware") or {}).get("version")
    if not driver or not firmware:
        return []  # nothing to compare: version-files / npu-pci report why
    problems = list((got.get("compatibility") or {}).get("problems") or [])
    catalog = pair_problem(None, str(driver), str(firmware))
    if catalog:
        problems.append(f"catalog: {catalog}")
    if str(active.get("compatibility") or "").lower() not in ("", "ok", "na"):
        problems.append(f"npu-smi board Compatibility: {active.get('compatibility')}")
    if problems:
        return [Finding(host, "driver-firmware", Status.fail, "; ".join(problems), FIX_PAIR)]
    return [
        Finding(
            host, "driver-firmware", Status.ok, f"driver {driver} and firmware {firmware} accept each other"
        )
    ]


FILES = LiveCheck(
    "version-files",
    "/usr/local/Ascend/driver/version.info and /etc/ascend_install.info present, readable, naming a version",
    FIX_FILES,
    check_files,
)
VERSIONS = LiveCheck(
    "driver-version / firmware-version",
    "installed (version.info) and active (npu-smi info -t board) driver and firmware vs the spec's",
    FIX_VERSION,
    check_versions,
)
PAIR = LiveCheck(
    "driver-firmware",
    "driver / firmware Compatibility: both version.info files, npu-smi's board Compatibility, the catalog",
    FIX_PAIR,
    check_pair,
)
