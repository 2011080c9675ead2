# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""version.info files of the Ascend HDK and the version ranges they carry (standard library only).

Formats (the Ascend HDK installation guide on hiascend.com; verbatim files in
tests/fixtures/ascend/version_info/):
  /usr/local/Ascend/driver/version.info    Version=24.1.rc2.2 ... compatible_version_fw=[7.0.0,7.2.99]
  /usr/local/Ascend/firmware/version.info  Version=7.7.0.1.231 ...
                                           compatible_version_drv=[23.0.0,23.0.0.],[24.0,24.0.],[25.0,25.0.]
  /etc/ascend_install.info                 UserName=HwHiAiUser ... Driver_Install_Path_Param=/usr/local/Ascend
Ranges are inclusive [low,high] intervals separated by ','; a high bound ending in '.' is a prefix ("24.1."
stands for every 24.1.x), and a version that starts with the low bound is inside even when it sorts before
it (24.1.rc3 is in [24.1,24.1.]).

Versions compare component by component: numbers numerically, words (dev < alpha < beta < rc) before any
number at the same position, missing components count as 0 (24.1.rc3 < 24.1.0 < 24.1.0.3; 9.1 == 9.1.0).
"""

from __future__ import annotations

import re
from typing import Any, Tuple

Part = Tuple[int, int, int]
Range = Tuple[str, str, bool]

_TOKEN = re.compile(r"[0-9]+|[a-z]+")
_ZERO: Part = (1, 0, 0)
_MAX_PARTS = 16
_WORDS = {"dev": 0, "alpha": 1, "a": 1, "beta": 2, "b": 2, "rc": 3}
_INTERVAL = re.compile(r"\[\s*([^,\[\]\s]+)\s*,\s*([^,\[\]\s]+)\s*\]")

DRIVER_VERSION_INFO = "/usr/local/Ascend/driver/version.info"
FIRMWARE_VERSION_INFO = "/usr/local/Ascend/firmware/version.info"
INSTALL_INFO = "/etc/ascend_install.info"


def parse_kv(text: str | None) -> dict[str, str]:
    """key=value lines -> dict (blank lines, comments and lines without '=' are skipped)."""
    out: dict[str, str] = {}
    for line in (text or "").splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key.strip() and not key.startswith("#"):
            out[key.strip()] = value.strip()
    return out


def _parts(version: str) -> list[Part]:
    """Components of a version: (1, n) for numbers, (0, word rank, n) for rc/beta/... parts."""
    text = str(version).strip().lower()
    if text.startswith("v"):
        text = text[1:]
    tokens = _TOKEN.findall(text)
    if not tokens or not text[0].isdigit():
        raise ValueError(f"not a version: {version!r} (e.g. 25.0.rc1.1 or 7.7.0.1.231)")
    parts: list[Part] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.isdigit():
            parts.append((1, int(tok), 0))
            i += 1
            continue
        if tok not in _WORDS:
            raise ValueError(f"not a version: {version!r} (unknown part {tok!r})")
        number = 0
        if i + 1 < len(tokens) and tokens[i + 1].isdigit():
            number = int(tokens[i + 1])
            i += 1
        parts.append((0, _WORDS[tok], number))
        i += 1
    return parts


def version_key(version: str) -> tuple[Part, ...]:
    """A sort key: the components padded with zeros to a fixed width, so that a missing component counts as
    0 in plain tuple order (9.1 == 9.1.0, 23.0.rc2 < 23.0.0: the rc sorts before the number 0)."""
    parts = _parts(version)
    if len(parts) > _MAX_PARTS:
        raise ValueError(f"not a version: {version!r} (more than {_MAX_PARTS} components)")
    return tuple(parts + [_ZERO] * (_MAX_PARTS - len(parts)))


def same_version(a: str | None, b: str | None) -> bool:
    """True when both are versions and equal by meaning (25.0.RC1 == 25.0.rc1, 9.1 == 9.1.0)."""
    if not a or not b:
        return False
    try:
        return version_key(a) == version_key(b)
    except ValueError:
        return str(a).strip() == str(b).strip()


def compare(a: str, b: str) -> int:
    """-1, 0 or 1 as a is older than, equal to or newer than b."""
    ka, kb = version_key(a), version_key(b)
    return int(ka > kb) - int(ka < kb)


def starts_with(version: str, prefix: str) -> bool:
    """True when the version's components begin with the prefix's (24.1.rc2.2 starts with 24.1.rc2)."""
    head = _parts(prefix)
    return _parts(version)[: len(head)] == head


def parse_ranges(text: str | None) -> list[Range]:
    """'[7.0.0,7.2.99]' or '[23.0.0,23.0.0.],[24.0,24.0.]' -> [(low, high, high_is_prefix)]."""
    stripped = (text or "").strip()
    found = list(_INTERVAL.finditer(stripped))
    rebuilt = ",".join(m.group(0) for m in found)
    if not found or rebuilt.replace(" ", "") != stripped.replace(" ", ""):
        raise ValueError(
            f"invalid version range list {text!r}: expected [low,high] intervals separated by ','"
        )
    out: list[Range] = []
    for m in found:
        low, high = m.group(1).rstrip("."), m.group(2)
        out.append((low, high.rstrip("."), high.endswith(".")))
    return out


def in_ranges(version: str, ranges: list[Range]) -> bool:
    """Whether the version lies in any of the parsed ranges."""
    for low, high, high_prefix in ranges:
        above = compare(version, low) >= 0 or starts_with(version, low)
        below = compare(version, high) <= 0 or (high_prefix and starts_with(version, high))
        if above and below:
            return True
    return False


def accepts(range_text: str | None, version: str | None) -> bool | None:
    """True / False when range_text parses and names (or not) the version; None when it is missing or bad."""
    if not range_text or not version:
        return None
    try:
        return in_ranges(version, parse_ranges(range_text))
    except ValueError:
        return None


def pair_check(
    driver_info: dict[str, str] | None,
    firmware_info: dict[str, str] | None,
    driver_version: str | None = None,
    firmware_version: str | None = None,
) -> dict[str, Any]:
    """Compatibility of a driver and a firmware in both directions, from their version.info dicts.

    driver_version / firmware_version default to the files' Version. Returns a dict:
      driver_accepts_firmware: the driver's compatible_version_fw names the firmware (None: not stated)
      firmware_accepts_driver: the firmware's compatible_version_drv names the driver (None: not stated)
      ok: False when either side refuses, True when at least one side accepts and none refuses, else None
      problems: sentences saying which side refuses which version
    """
    drv = driver_version or (driver_info or {}).get("Version")
    fw = firmware_version or (firmware_info or {}).get("Version")
    fw_range = (driver_info or {}).get("compatible_version_fw")
    drv_range = (firmware_info or {}).get("compatible_version_drv")
    d_ok = accepts(fw_range, fw)
    f_ok = accepts(drv_range, drv)
    problems: list[str] = []
    if d_ok is False:
        problems.append(
            f"driver {drv} accepts firmware {fw_range} (its version.info compatible_version_fw), not {fw}"
        )
    if f_ok is False:
        problems.append(
            f"firmware {fw} accepts drivers {drv_range} (its version.info compatible_version_drv), not {drv}"
        )
    ok: bool | None = None
    if problems:
        ok = False
    elif d_ok or f_ok:
        ok = True
    return {
        "driver_version": drv,
        "firmware_version": fw,
        "driver_accepts_firmware": d_ok,
        "firmware_accepts_driver": f_ok,
        "ok": ok,
        "problems": problems,
    }


def wanted_state(
    driver_version: str | None,
    firmware_version: str | None,
    active: dict[str, Any],
    want_driver: str | None,
    want_firmware: str | None,
) -> dict[str, Any]:
    """Whether a host runs the wanted pair, compared by meaning (same_version: 25.0.RC1 == 25.0.rc1, as the
    portal and version.info write it). driver_version / firmware_version come from the version.info files,
    active from the boards (npu-smi info -t board). A firmware flashed at the factory leaves no version.info:
    then the firmware running from flash is the installed one (firmware_factory true)."""
    active_drv, active_fw = active.get("software_version"), active.get("firmware_version")
    installed_fw = firmware_version or active_fw
    out: dict[str, Any] = {
        "driver": want_driver,
        "firmware": want_firmware,
        "firmware_installed_version": installed_fw,
        "firmware_factory": not firmware_version and bool(active_fw),
        "driver_installed": same_version(driver_version, want_driver) if want_driver else None,
        "driver_active": same_version(active_drv, want_driver) if want_driver else None,
        "firmware_installed": same_version(installed_fw, want_firmware) if want_firmware else None,
        "firmware_active": same_version(active_fw, want_firmware) if want_firmware else None,
    }
    checks = ("driver_installed", "driver_active", "firmware_installed", "firmware_active")
    out["current"] = all(out[k] for k in checks) if want_driver and want_firmware else None
    return out
