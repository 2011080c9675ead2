#!/usr/bin/python
"""ascend.npu.kernel_param: set kernel attributes in sysfs, debugfs or procfs, reading them first."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kernel_param
short_description: Set sysfs / debugfs / procfs kernel attributes, comparing before writing
description:
  - Reads each attribute, compares it with the wanted value the way the kernel shows it, and writes only
    the ones that differ (one write per attribute, like C(echo value > path)); the value is read back after
    the write.
  - Choice files are bracket-aware, for example C(always [madvise] never) in
    C(/sys/kernel/mm/transparent_hugepage/enabled) holds C(madvise).
  - CPU lists (C(smp_affinity_list), C(0-3,8)) compare as sets of CPUs; boolean module parameters
    (C(Y)/C(N)) compare with C(1)/C(0)/C(y)/C(n)/C(on)/C(off).
  - Nothing here makes a setting persistent; the caller writes the persistent file (tmpfiles.d, sysctl.d,
    modprobe.d).
options:
  settings:
    description:
      - Attribute path (a shell glob matches several, for example every CPU's scaling_governor) -> value.
    type: dict
    required: true
  missing:
    description:
      - What a path (or glob) matching no attribute does. C(fail) stops with the path; C(skip) reports it
        in RV(missing) and goes on.
    type: str
    choices: [fail, skip]
    default: fail
  missing_reason:
    description:
      - With C(missing=skip), why a path matching nothing is acceptable and what to do about it; the
        module warns with the paths and this text (RV(warnings)).
    type: str
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
author: ascend-orchestrator
"""

EXAMPLES = r"""
- name: Transparent hugepages always
  ascend.npu.kernel_param:
    settings:
      /sys/kernel/mm/transparent_hugepage/enabled: always
- name: Performance governor on every CPU
  ascend.npu.kernel_param:
    settings:
      /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor: performance
"""

RETURN = r"""
changed_paths:
  description: Attributes that differed (and were written unless in check mode).
  type: list
  elements: str
  returned: always
current:
  description: Attribute -> value as the kernel shows it after the run (the active choice of a choice file).
  type: dict
  returned: always
missing:
  description: Paths or globs that matched no attribute (with missing=skip).
  type: list
  elements: str
  returned: always
"""

import glob
import os
import re
from typing import Any

from ansible.module_utils.basic import AnsibleModule

_BRACKET = re.compile(r"\[([^\]]+)\]")
_CPULIST = re.compile(r"\d+(-\d+)?(,\d+(-\d+)?)*")
_TRUE = {"y", "1", "on", "yes", "true"}
_FALSE = {"n", "0", "off", "no", "false"}


def shown(raw: str) -> str:
    """The value a file holds: the bracketed choice of a choice file, else the stripped text."""
    text = raw.strip()
    m = _BRACKET.search(text)
    return m.group(1) if m and " " in text else text


def _cpus(text: str) -> set[int]:
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def same(current: str, wanted: str) -> bool:
    if current == wanted:
        return True
    if _CPULIST.fullmatch(current) and _CPULIST.fullmatch(wanted):
        return _cpus(current) == _cpus(wanted)
    if current in ("Y", "N"):
        w = wanted.lower()
        return (current == "Y" and w in _TRUE) or (current == "N" and w in _FALSE)
    return False


def read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return shown(f.read())


def write(path: str, value: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(value + "\n")


def expand(pattern: str) -> list[str]:
    if any(c in pattern for c in "*?["):
        return sorted(glob.glob(pattern))
    return [pattern] if os.path.exists(pattern) else []


def run(module: AnsibleModule) -> None:
    settings = module.params["settings"]
    plan: list[tuple[str, str]] = []
    missing: list[str] = []
    for pattern, value in settings.items():
        paths = expand(pattern)
        if not paths:
            missing.append(pattern)
            continue
        plan += [(path, str(value).strip()) for path in paths]
    if missing and module.params["missing"] == "skip":
        why = module.params["missing_reason"] or "this kernel does not offer it"
        module.warn(f"No kernel attribute at {', '.join(missing)}, skipped: {why}")
    if missing and module.params["missing"] == "fail":
        module.fail_json(
            msg=f"No kernel attribute at {', '.join(missing)}: this kernel does not offer it (module not "
            "loaded, driver absent, or a different kernel version). Fix: check the path on the host, or "
            "leave the setting out of the spec.",
            missing=missing,
        )
    current: dict[str, str] = {}
    changed: list[str] = []
    before: list[str] = []
    after: list[str] = []
    for path, value in plan:
        try:
            now = read(path)
        except OSError as exc:
            module.fail_json(msg=f"Cannot read {path}: {exc.strerror}. Fix: check that the kernel offers it.")
        current[path] = now
        if same(now, value):
            continue
        changed.append(path)
        before.append(f"{path}: {now}\n")
        after.append(f"{path}: {value}\n")
        if module.check_mode:
            current[path] = value
            continue
        try:
            write(path, value)
            current[path] = read(path)
        except OSError as exc:
            module.fail_json(
                msg=f"The kernel refused {value!r} for {path}: {exc.strerror}. Fix: use a value the kernel "
                f"accepts (it shows {now!r} now).",
                changed_paths=changed[:-1],
            )
        if not same(current[path], value):
            module.fail_json(
                msg=f"{path} shows {current[path]!r} after writing {value!r}: the kernel adjusted it. "
                "Fix: use a value this host can hold.",
                changed_paths=changed,
            )
    result: dict[str, Any] = {
        "changed": bool(changed),
        "changed_paths": changed,
        "current": current,
        "missing": missing,
    }
    if module._diff and changed:
        result["diff"] = {"before": "".join(before), "after": "".join(after)}
    module.exit_json(**result)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "settings": {"type": "dict", "required": True},
            "missing": {"type": "str", "choices": ["fail", "skip"], "default": "fail"},
            "missing_reason": {"type": "str"},
        },
        supports_check_mode=True,
    )
    run(module)


if __name__ == "__main__":
    main()
