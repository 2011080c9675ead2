#!/usr/bin/python
# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""ascend.npu.hccn: the NPU NICs of a host as desired, through hccn_tool, changing only what differs."""

from __future__ import annotations

DOCUMENTATION = r"""
module: hccn
short_description: Configure the NPU RoCE NICs of a host through hccn_tool
description:
  - For every listed device, reads the live NIC settings with
    C(hccn_tool -i N -ip|-netdetect|-gateway|-tls|-mtu -g) and the records in C(/etc/hccn.conf), and sets
    with C(hccn_tool -i N -<option> -s ...) only the settings that differ.
  - C(hccn_tool -s) changes the live NIC and records the setting in C(/etc/hccn.conf), which the driver
    applies at boot. A setting whose file record disagrees with the desired value (a hand-edited or stale
    file, that is drift) is set again through hccn_tool, which rewrites its record; the drift is reported as a
    warning with the live and the recorded value.
  - Settings left out (C(null) gateway or netdetect, C(tls) or C(mtu) not given) are neither read nor
    changed. The MTU is recorded too (C(mtu_N), written by tool_mtu_cmd_execute in
    src/custom/network/hccn/ascend910B/hccn_tool/tool_ops.c of github.com/verylucky01/driver at e29d066f).
  - After setting, reads everything back and fails when a value did not take.
  - Check mode reports the exact differences (and the commands that would run) without running any set
    command; with C(--diff) it shows, per device, the live values and the file records before and after.
options:
  devices:
    description: Desired settings per device (C(index) is the N of C(hccn_tool -i N), the physical id).
    type: list
    elements: dict
    required: true
    suboptions:
      index: {description: Device (the physical id of hccn_tool -i N)., type: int, required: true}
      address: {description: IPv4 address of the NIC., type: str, required: true}
      netmask: {description: Netmask of the NIC., type: str, required: true}
      gateway: {description: Gateway (C(-gateway -s gateway)); null leaves it alone., type: str}
      netdetect: {description: Address probed by the link detection; null leaves it alone., type: str}
  tls:
    description: TLS of every listed device (C(-tls -s enable 0|1)); null leaves it alone.
    type: bool
  mtu:
    description: MTU of every listed device (C(-mtu -s size N)); null leaves it alone.
    type: int
  hccn_tool:
    description: Path of hccn_tool.
    type: path
    default: /usr/local/Ascend/driver/tools/hccn_tool
  conf_path:
    description: The file hccn_tool records the settings in.
    type: path
    default: /etc/hccn.conf
author: ascend-orchestrator
"""

EXAMPLES = r"""
- name: NPU NIC addresses
  ascend.npu.hccn:
    devices:
      - {index: 0, address: 192.168.100.10, netmask: 255.255.255.0, gateway: 192.168.100.1,
         netdetect: 192.168.100.1}
    tls: false
"""

RETURN = r"""
devices:
  description: Per device, the live values and file records before, and the settings changed (or to change).
  returned: always
  type: list
  sample: [{"index": 3, "changes": ["address"], "live": {"address": "10.0.0.99"},
            "file": {"address": "10.0.0.99"}}]
drift:
  description: Settings whose /etc/hccn.conf record disagrees with the live NIC (before any change).
  returned: always
  type: list
  sample: [{"index": 3, "setting": "address", "live": "10.0.0.13", "file": "10.0.0.99"}]
commands:
  description: The hccn_tool commands run (in check mode, the ones that would run).
  returned: always
  type: list
  elements: str
"""

import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.npu.plugins.module_utils.hccn_tool import (
    CONF_KEY,
    OPTION,
    SETTINGS,
    HccnError,
    HccnTool,
    execute,
    read_conf,
    shell,
)

ORDER = [name for name, _, _ in SETTINGS]
READERS = 8  # devices read at once
VERIFY_READS = 3


def desired_of(dev: dict[str, Any], tls: bool | None, mtu: int | None) -> dict[str, str]:
    want = {"address": dev["address"], "netmask": dev["netmask"]}
    for name in ("netdetect", "gateway"):
        if dev.get(name):
            want[name] = dev[name]
    if tls is not None:
        want["tls_enable"] = "1" if tls else "0"
    if mtu is not None:
        want["mtu"] = str(mtu)
    return want


def compare(
    want: dict[str, str], live: dict[str, str | None], record: dict[str, str]
) -> tuple[list[str], list[dict[str, Any]]]:
    """(settings to set, drift between file and live); a setting is set when its live value or its file
    record (missing included) differs from the desired value (setting through hccn_tool rewrites the
    record)."""
    changes = [
        n
        for n in ORDER
        if n in want and (live.get(n) != want[n] or (n in CONF_KEY and record.get(n) != want[n]))
    ]
    drift = [  # a missing record is not drift: the driver keeps the NIC's own value at boot
        {"setting": n, "live": live.get(n), "file": record[n]}
        for n in ORDER
        if n in want and n in CONF_KEY and n in record and record[n] != live.get(n)
    ]
    return changes, drift


def options_of(changes: list[str]) -> list[str]:
    """hccn_tool options to run, in order, once each (-ip sets address and netmask together)."""
    out: list[str] = []
    for name in changes:
        if OPTION[name] not in out:
            out.append(OPTION[name])
    return out


def render(index: int, want: dict[str, str], live: dict[str, Any], record: dict[str, Any], conf: str) -> str:
    lines = [f"live device {index}:"]
    lines += [f"  {n}: {live.get(n)}" for n in ORDER if n in want]
    lines += [f"{conf}:"]
    lines += [f"  {CONF_KEY[n]}_{index}={record.get(n) or ''}" for n in ORDER if n in want and n in CONF_KEY]
    return "\n".join(lines) + "\n"


def read_live(tool: HccnTool, wants: list[tuple[int, dict[str, str]]]) -> list[dict[str, str | None]]:
    """Live values per device; devices are read in parallel (reads only: set commands, which rewrite
    /etc/hccn.conf, always run one at a time)."""
    with ThreadPoolExecutor(max_workers=max(1, min(READERS, len(wants)))) as pool:
        return list(pool.map(lambda w: tool.read(w[0], list(w[1])), wants))


def plan(module: AnsibleModule, tool: HccnTool) -> list[dict[str, Any]]:
    conf = read_conf(module.params["conf_path"])
    devs = sorted(module.params["devices"], key=lambda d: d["index"])
    wants = [(d["index"], desired_of(d, module.params["tls"], module.params["mtu"])) for d in devs]
    out = []
    for (index, want), live in zip(wants, read_live(tool, wants)):
        record = {n: conf.get(index, {}).get(key) for n, key in CONF_KEY.items() if n in want}
        changes, drift = compare(want, live, {k: v for k, v in record.items() if v is not None})
        argv = [tool.set_args(index, opt, want) for opt in options_of(changes)]
        out.append(
            {"index": index, "want": want, "live": live, "file": record, "changes": changes, "drift": drift,
             "argv": argv}
        )  # fmt: skip
    return out


def problems_of(module: AnsibleModule, tool: HccnTool, items: list[dict[str, Any]]) -> dict[int, list[str]]:
    """Per device index, the live values or file records that are not as desired."""
    conf = read_conf(module.params["conf_path"])
    out: dict[int, list[str]] = {}
    for item, live in zip(items, read_live(tool, [(i["index"], i["want"]) for i in items])):
        index, want = item["index"], item["want"]
        record = {n: conf.get(index, {}).get(key) for n, key in CONF_KEY.items() if n in want}
        for name in want:
            if live.get(name) != want[name]:
                out.setdefault(index, []).append(
                    f"device {index}: {name} is {live.get(name)} after setting {want[name]}"
                )
            elif name in CONF_KEY and record.get(name) != want[name]:
                out.setdefault(index, []).append(
                    f"device {index}: {module.params['conf_path']} records {CONF_KEY[name]}_{index}="
                    f"{record.get(name)} after hccn_tool set {want[name]}"
                )
    return out


def verify(module: AnsibleModule, tool: HccnTool, planned: list[dict[str, Any]]) -> list[str]:
    """Problems after setting; a device that does not show its settings yet is read again (VERIFY_READS
    times, a second apart) before it counts."""
    items = [item for item in planned if item["changes"]]
    found: dict[int, list[str]] = {}
    for attempt in range(VERIFY_READS):
        found = problems_of(module, tool, items)
        if not found:
            return []
        items = [item for item in items if item["index"] in found]
        if attempt + 1 < VERIFY_READS:
            time.sleep(1)
    return [msg for index in sorted(found) for msg in found[index]]


def main() -> None:
    device = {
        "index": {"type": "int", "required": True},
        "address": {"type": "str", "required": True},
        "netmask": {"type": "str", "required": True},
        "gateway": {"type": "str"},
        "netdetect": {"type": "str"},
    }
    module = AnsibleModule(
        argument_spec={
            "devices": {"type": "list", "elements": "dict", "required": True, "options": device},
            "tls": {"type": "bool"},
            "mtu": {"type": "int"},
            "hccn_tool": {"type": "path", "default": "/usr/local/Ascend/driver/tools/hccn_tool"},
            "conf_path": {"type": "path", "default": "/etc/hccn.conf"},
        },
        supports_check_mode=True,
    )
    path = module.params["hccn_tool"]
    if not os.access(path, os.X_OK) and module.check_mode:
        # a dry run before the drivers phase ever ran: the driver (and its hccn_tool) would come first, and
        # then every planned setting would be set
        module.exit_json(
            changed=True,
            devices=[],
            drift=[],
            commands=[],
            msg=f"{path} is not installed yet (the drivers phase installs it): every planned NIC "
            "setting would be set.",
        )
    if not os.access(path, os.X_OK):
        module.fail_json(
            msg=f"{path} is missing or not executable: hccn_tool ships with the NPU driver. Fix: install the "
            "driver (the drivers phase) before configuring the NPU NICs."
        )
    tool = HccnTool(execute, path)
    conf_path = module.params["conf_path"]
    try:
        planned = plan(module, tool)
    except HccnError as exc:
        module.fail_json(msg=f"Reading the NPU NIC settings failed: {exc}")
    for item in planned:
        for d in item["drift"]:
            module.warn(
                f"{conf_path} disagrees with the live NIC of device {item['index']}: "
                f"{CONF_KEY[d['setting']]}_{item['index']}={d['file']} in the file, {d['setting']} "
                f"{d['live']} live; a reboot would apply the file. "
                + (
                    "Check mode: hccn_tool would rewrite it."
                    if module.check_mode
                    else "Rewritten through hccn_tool."
                )
            )
    commands = [shell(a) for item in planned for a in item["argv"]]
    changed = bool(commands)
    result: dict[str, Any] = {
        "changed": changed,
        "commands": commands,
        "drift": [{"index": i["index"], **d} for i in planned for d in i["drift"]],
        "devices": [
            {k: i[k] for k in ("index", "changes", "live", "file")}
            for i in planned
            if i["changes"] or i["drift"]
        ],
    }
    if module._diff:
        result["diff"] = [
            {
                "before_header": f"NPU NIC {i['index']}",
                "after_header": f"NPU NIC {i['index']}",
                "before": render(i["index"], i["want"], i["live"], i["file"], conf_path),
                "after": render(i["index"], i["want"], i["want"], i["want"], conf_path),
            }
            for i in planned
            if i["changes"]
        ]
    if module.check_mode or not changed:
        module.exit_json(**result)
    try:
        for item in planned:
            for argv in item["argv"]:
                tool.set(argv)
        problems = verify(module, tool, planned)
    except HccnError as exc:
        module.fail_json(msg=f"Setting the NPU NICs failed: {exc}", **result)
    if problems:
        module.fail_json(msg="The NPU NICs did not take their settings: " + "; ".join(problems), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
