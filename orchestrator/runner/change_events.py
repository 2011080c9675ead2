"""ansible-runner result events -> Change records (what a check-mode run says an apply would change).

- One Change per changed task result: `runner_on_ok` of a task without a loop, `runner_item_on_ok` per
  changed item of a looped task (its final `runner_on_ok`, which carries every item again in
  res["results"], is not counted twice).
- The diff is Ansible's own res["diff"] (a dict or a list of dicts: before/after with their headers,
  or "prepared" text), rendered as a unified diff the way Ansible's callbacks print it (difflib, 3 lines of
  context, dicts as block YAML: callback_result_format = yaml).
- The kind comes from the task's resolved action and its role (sysctl, package, file, service, ...); the
  detail is one line a person reads, from the module's own return values and arguments.
- A result Ansible censored (no_log) keeps nothing but its task, host and kind.
"""

from __future__ import annotations

import difflib
import json
import textwrap
from collections.abc import Mapping
from typing import Any

import yaml

from orchestrator.runner.changes import Change, ChangeKind
from orchestrator.runner.messages import strip_ansi

OK_EVENTS = ("runner_on_ok", "runner_item_on_ok", "runner_on_async_ok")
DIFF_CONTEXT = 3  # Ansible's DIFF_CONTEXT default
CENSORED = "(details hidden: the task is no_log)"

_ACTION_KINDS: dict[str, ChangeKind] = {
    "sysctl": ChangeKind.SYSCTL,
    **dict.fromkeys(
        ("apt", "pip", "package", "dnf", "yum", "apt_repository", "apt_key", "deb822_repository", "rpm_key"),
        ChangeKind.PACKAGE,
    ),
    **dict.fromkeys(
        (
            "copy",
            "template",
            "lineinfile",
            "blockinfile",
            "file",
            "replace",
            "ini_file",
            "get_url",
            "unarchive",
        ),
        ChangeKind.FILE,
    ),
    **dict.fromkeys(("systemd_service", "systemd", "service", "sysvinit"), ChangeKind.SERVICE),
    **dict.fromkeys(("modprobe", "kernel_param", "mount", "npu_irqs"), ChangeKind.KERNEL),
    **dict.fromkeys(("hccn",), ChangeKind.NPU_NIC),
    **dict.fromkeys(
        ("docker_image", "docker_image_load", "docker_image_build", "docker_image_pull", "docker_image_push"),
        ChangeKind.IMAGE,
    ),
    "unarchive": ChangeKind.FILE,
    **dict.fromkeys(("weights_transfer", "weights_verify"), ChangeKind.WEIGHTS),
}
_ROLE_KINDS: dict[str, ChangeKind] = {
    "npu_driver": ChangeKind.DRIVER,
    "npu_firmware": ChangeKind.FIRMWARE,
    "vllm_image": ChangeKind.IMAGE,
    "model_weights": ChangeKind.WEIGHTS,
    "vllm_serve": ChangeKind.REPLICA,
    "gateway": ChangeKind.GATEWAY,
    "hccn_network": ChangeKind.NPU_NIC,
}
# in these roles, what the role is about wins over the module (a container of vllm_serve is a replica); a
# package staged by roles/ascend_package for any role is a file change, the install itself (hdk_package) the
# driver or firmware change
_ROLE_WINS = {"copy", "get_url", "hdk_package", "docker_container", "debug", "command", "shell"}


def _short(action: str) -> str:
    return action.rsplit(".", 1)[-1]


def kind_of(action: str, role: str, res: Mapping[str, Any]) -> ChangeKind:
    short = _short(action)
    if short == "hdk_package":
        return ChangeKind.FIRMWARE if res.get("kind") == "firmware" else ChangeKind.DRIVER
    if role in _ROLE_KINDS and (short in _ROLE_WINS or short not in _ACTION_KINDS):
        return _ROLE_KINDS[role]
    if short in ("docker_container", "docker_compose_v2"):
        return ChangeKind.SERVICE
    return _ACTION_KINDS.get(short, ChangeKind.OTHER)


def _text(value: Any) -> str:
    """A dict as Ansible's callbacks serialize it with the rendered ansible.cfg (callback_result_format =
    yaml): block YAML, keys sorted, indented by 4."""
    if isinstance(value, Mapping):
        dumped = yaml.safe_dump(dict(value), allow_unicode=True, default_flow_style=False, indent=4)
        return textwrap.indent(dumped, "    ") + "\n"
    return "" if value is None else str(value)


def unified_diff(diff: Any) -> str:
    """Ansible's diff result (a dict or a list of them) as the unified diff its callbacks print."""
    out: list[str] = []
    for d in diff if isinstance(diff, list) else [diff]:
        if not isinstance(d, Mapping):
            continue
        for key, what in (("dst_binary", "destination"), ("src_binary", "source")):
            if key in d:
                out.append(f"diff skipped: {what} file appears to be binary\n")
        for key, what in (("dst_larger", "destination"), ("src_larger", "source")):
            if key in d:
                out.append(f"diff skipped: {what} file size is greater than {d[key]}\n")
        if "before" in d and "after" in d:
            before, after = _text(d["before"]).splitlines(True), _text(d["after"]).splitlines(True)
            for lines in (before, after):
                if lines and not lines[-1].endswith("\n"):
                    lines[-1] += "\n\\ No newline at end of file\n"
            head_b = f"before: {d['before_header']}" if "before_header" in d else "before"
            head_a = f"after: {d['after_header']}" if "after_header" in d else "after"
            lines = list(difflib.unified_diff(before, after, head_b, head_a, "", "", n=DIFF_CONTEXT))
            out += [*lines, "\n"] if lines else []
        if "prepared" in d:
            out.append(str(d["prepared"]))
    return "".join(out).rstrip("\n")


def _args(res: Mapping[str, Any]) -> Mapping[str, Any]:
    inv = res.get("invocation")
    args = inv.get("module_args") if isinstance(inv, Mapping) else None
    return args if isinstance(args, Mapping) else {}


def _names(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value)


def _hccn_want(args: Mapping[str, Any], index: Any) -> dict[str, str]:
    """The settings ascend.npu.hccn was asked for on one NPU (its devices, tls and mtu arguments)."""
    want = {"tls_enable": "1" if args.get("tls") else "0"} if args.get("tls") is not None else {}
    if args.get("mtu") is not None:
        want["mtu"] = str(args["mtu"])
    for dev in args.get("devices") or []:
        if isinstance(dev, Mapping) and dev.get("index") == index:
            want.update({str(k): str(v) for k, v in dev.items() if v is not None and k != "index"})
    return want


def _hccn_detail(res: Mapping[str, Any]) -> str:
    parts = []
    for dev in res.get("devices") or []:
        if not isinstance(dev, Mapping) or not dev.get("changes"):
            continue
        live, file = dev.get("live") or {}, dev.get("file") or {}
        want = _hccn_want(_args(res), dev.get("index"))
        settings = ", ".join(
            f"{c} {live.get(c) or '-'} -> {want.get(c, '?')}"
            if live.get(c) != want.get(c)
            else f"{c} in /etc/hccn.conf {file.get(c) or '-'} -> {want.get(c, '?')}"
            for c in dev["changes"]
        )
        parts.append(f"NPU {dev.get('index')}: {settings}")
    return "; ".join(parts)


def _hdk_detail(res: Mapping[str, Any]) -> str:
    line = (
        f"{res.get('kind')} {res.get('previous_version') or 'none'} -> {res.get('version')} "
        f"({res.get('operation')})"
    )
    reason = res.get("reboot_reason") or ""
    return f"{line}; needs a reboot: {reason}" if reason else line


def _weights_detail(res: Mapping[str, Any]) -> str:
    """weights_verify: the files that do not match the manifest (moved aside when repair is on)."""
    parts = [
        f"{state}: {_names(res[state])}"
        for state in ("mismatched", "partial", "missing")
        if isinstance(res.get(state), list) and res[state]
    ]
    where = str(res.get("path") or "")
    return f"{where}: {'; '.join(parts)}" if parts else where


def detail_of(kind: ChangeKind, action: str, res: Mapping[str, Any]) -> str:
    """One line: what would change, from the module's return values and arguments."""
    short, args = _short(action), _args(res)
    if short == "hdk_package":
        return _hdk_detail(res)
    if short == "sysctl":
        return f"{args.get('name')} -> {args.get('value')}" + (
            f" ({args['sysctl_file']})" if args.get("sysctl_file") else ""
        )
    if short == "weights_verify":
        return _weights_detail(res)
    if short == "hccn":
        return _hccn_detail(res) or "; ".join(str(c) for c in res.get("commands") or [])
    if short == "kernel_param" and res.get("changed_paths"):
        return ", ".join(str(p) for p in res["changed_paths"])
    if short == "debug" and res.get("msg"):
        return str(res["msg"])
    if kind is ChangeKind.PACKAGE:
        return f"{args.get('state') or 'present'}: {_names(args.get('name') or args.get('repo'))}"
    if kind is ChangeKind.SERVICE and args.get("name"):
        wanted = [str(args[k]) for k in ("state",) if args.get(k)]
        wanted += [("enabled" if args["enabled"] else "disabled")] if args.get("enabled") is not None else []
        return f"{args['name']}: {', '.join(wanted) or 'changed'}"
    if short == "modprobe":
        return f"module {args.get('name')}: {args.get('state')}" + (
            f" ({args['params']})" if args.get("params") else ""
        )
    if short == "docker_container":
        return f"container {args.get('name')}: {args.get('state') or 'started'}"
    path = res.get("path") or res.get("dest") or args.get("path") or args.get("dest")
    if path:
        state = args.get("state")
        return f"{path}" + (f" ({state})" if isinstance(state, str) else "")
    msg = res.get("msg")
    return str(msg) if isinstance(msg, str) and msg and "\n" not in msg else ""


def change_of(phase: str, data: Mapping[str, Any], stdout: str = "") -> Change | None:
    """The Change of one changed result (event_data of runner_on_ok / runner_item_on_ok), else None.
    A no_log result keeps only "censored" in res: Ansible's printed line ("changed: [host]") tells."""
    res = data.get("res")
    if not isinstance(res, Mapping):
        return None
    censored = bool(res.get("_ansible_no_log")) or "censored" in res
    printed = strip_ansi(stdout).lstrip().startswith("changed:")
    if not (res.get("changed") or (censored and "changed" not in res and printed)):
        return None
    action = str(data.get("resolved_action") or data.get("task_action") or "")
    role = str(data.get("role") or "")
    kind = kind_of(action, role, res)
    detail = CENSORED if censored else detail_of(kind, action, res)
    delegated = res.get("_ansible_delegated_vars")  # delegate_to: where the task runs (its address)
    if isinstance(delegated, Mapping) and delegated.get("ansible_host") and not censored:
        detail = f"{detail} (delegated to {delegated['ansible_host']})".lstrip()
    label = res.get("_ansible_item_label", res.get("item")) if "ansible_loop_var" in res else None
    item = "" if label is None else (label if isinstance(label, str) else json.dumps(label, sort_keys=True))
    reboot = bool(res.get("reboot_required") or res.get("reboot_expected"))
    return Change(
        phase=phase,
        host=str(data.get("host") or ""),
        task=str(data.get("task") or ""),
        action=action,
        kind=kind,
        item="(censored)" if censored and item else item,
        detail=detail,
        diff="" if censored else unified_diff(res.get("diff")) if res.get("diff") else "",
        reboot=reboot,
    )


def _looped(res: Mapping[str, Any]) -> bool:
    results = res.get("results")
    return isinstance(results, list) and any(
        isinstance(r, Mapping) and "ansible_loop_var" in r for r in results
    )


def changes_of(phase: str, event: Mapping[str, Any]) -> list[Change]:
    """The Changes one ansible-runner event reports (none for every event but a changed ok result)."""
    kind = event.get("event")
    data = event.get("event_data") or {}
    if kind not in ("runner_on_ok", "runner_item_on_ok", "runner_on_async_ok") or not isinstance(
        data, Mapping
    ):
        return []
    res = data.get("res")
    if kind != "runner_item_on_ok" and isinstance(res, Mapping) and _looped(res):
        return []  # a looped task's summary: its items came as runner_item_on_ok already
    change = change_of(phase, data, str(event.get("stdout") or ""))
    return [change] if change is not None else []
