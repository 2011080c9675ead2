#!/usr/bin/python
"""ascend.npu.weights_transfer: serve model weights to peers (rsync daemon) or pull them, resumably."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: weights_transfer
short_description: Server-to-server weight copies - an rsync daemon on the seed, a resumable pull on the peer
description:
  - C(state=serving) starts an rsync daemon that serves O(path) read-only as module C(weights), bound to
    O(address) (the server's own address) on O(port), answering only the O(allow) addresses; files named
    C(*.mismatch-*) (moved aside by M(ascend.npu.weights_verify)) are never served. A daemon this module
    started before (its pid file) is stopped first.
  - C(state=stopped) stops that daemon (nothing to do when none runs).
  - C(state=pulled) copies O(src) (an C(rsync://) URL or a local directory) into O(path) with
    C(rsync --partial --append-verify), so that a cut copy continues where it stopped (the appended file is
    checked by rsync's whole-file checksum) and files already complete are skipped; O(bwlimit_kib) caps the
    rate. Returns the bytes the transfer carried.
  - Check mode - C(serving) and C(stopped) report what they would do; C(pulled) reports a change without
    contacting the source (the caller asks for a pull only where the weights verification found files to
    copy).
options:
  state:
    description: serving, stopped or pulled.
    type: str
    choices: [serving, stopped, pulled]
    required: true
  path:
    description: The weights directory (served, or pulled into).
    type: path
  src:
    description: State pulled - C(rsync://ADDRESS:PORT/weights/) or a local directory.
    type: str
  address:
    description: The server's own address - state serving binds the daemon to it, state pulled connects
      from it.
    type: str
  port:
    description: State serving - the daemon's TCP port.
    type: int
    default: 8873
  allow:
    description: State serving - the client addresses the daemon answers.
    type: list
    elements: str
    default: []
  bwlimit_kib:
    description: State pulled - KiB/s cap of the transfer (0 - none).
    type: int
    default: 0
  timeout_s:
    description: State pulled - I/O timeout of rsync in seconds.
    type: int
    default: 600
  run_dir:
    description: Where the daemon's config and pid file live.
    type: path
    default: /run/model-weights
  log_file:
    description: State serving - the daemon's log (one line per file sent, with the client's address).
    type: path
    default: /var/log/model-weights-rsyncd.log
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
author: ascend-orchestrator
"""

EXAMPLES = r"""
- name: Serve the weights to two peers
  ascend.npu.weights_transfer:
    state: serving
    path: /data/models/DeepSeek-R1-W8A8
    address: 10.0.0.11
    allow: [10.0.0.12, 10.0.0.13]
- name: Pull them
  ascend.npu.weights_transfer:
    state: pulled
    src: rsync://10.0.0.11:8873/weights/
    path: /data/models/DeepSeek-R1-W8A8
    bwlimit_kib: 102400
"""

RETURN = r"""
files_transferred:
  description: State pulled - regular files rsync wrote.
  type: int
  returned: when state is pulled
literal_bytes:
  description: State pulled - file bytes carried over the wire (rsync "Literal data").
  type: int
  returned: when state is pulled
pid:
  description: State serving - the daemon's process id.
  type: int
  returned: when state is serving
"""

import os
import re
import signal
import socket
import time
from typing import Any

from ansible.module_utils.basic import AnsibleModule

EXCLUDE = "*.mismatch-*"
STATS = {
    "files_transferred": re.compile(r"Number of regular files transferred: ([\d,]+)"),
    "literal_bytes": re.compile(r"Literal data: ([\d,]+) bytes"),
    "received_bytes": re.compile(r"Total bytes received: ([\d,]+)"),
}


def _pid(pid_file: str) -> int | None:
    try:
        with open(pid_file, encoding="utf-8") as fh:
            pid = int(fh.read().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def stop(run_dir: str, check_mode: bool) -> bool:
    pid_file = os.path.join(run_dir, "rsyncd.pid")
    pid = _pid(pid_file)
    if pid is None:
        return False
    if not check_mode:
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            if _pid(pid_file) is None:
                break
            time.sleep(0.1)
        if os.path.exists(pid_file):
            os.remove(pid_file)
    return True


def config_text(p: dict[str, Any], pid_file: str) -> str:
    return "\n".join(
        [
            "# written by ascend.npu.weights_transfer (role model_weights); removed with the daemon",
            f"pid file = {pid_file}",
            f"log file = {p['log_file']}",
            f"address = {p['address']}",
            f"port = {p['port']}",
            "use chroot = yes",
            "[weights]",
            f"  path = {p['path']}",
            "  read only = yes",
            "  list = no",
            "  uid = root",
            "  gid = root",
            "  hosts allow = " + " ".join(p["allow"]),
            "  hosts deny = *",
            f"  exclude = {EXCLUDE}",
            "  transfer logging = yes",
            "  log format = %o %a %f %l %b",  # file length, bytes actually sent
            "",
        ]
    )


def serve(module: AnsibleModule) -> dict[str, Any]:
    p = module.params
    if not (p["path"] and p["address"] and p["allow"]):
        module.fail_json(msg="state=serving needs path, address and allow")
    if module.check_mode:
        return {"changed": True}
    run_dir = p["run_dir"]
    os.makedirs(run_dir, mode=0o700, exist_ok=True)
    stop(run_dir, False)
    pid_file = os.path.join(run_dir, "rsyncd.pid")
    conf = os.path.join(run_dir, "rsyncd.conf")
    with open(conf, "w", encoding="utf-8") as fh:
        fh.write(config_text(p, pid_file))
    rsync = module.get_bin_path("rsync", required=True)
    rc, out, err = module.run_command([rsync, "--daemon", f"--config={conf}"])
    if rc != 0:
        module.fail_json(msg=f"rsync --daemon failed on {p['address']}:{p['port']}: {err or out}")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((p["address"], p["port"]), timeout=1):
                return {"changed": True, "pid": _pid(pid_file)}
        except OSError:
            time.sleep(0.2)
    module.fail_json(msg=f"the rsync daemon does not listen on {p['address']}:{p['port']} after 15 s")
    return {}


def pull(module: AnsibleModule) -> dict[str, Any]:
    p = module.params
    if not (p["path"] and p["src"]):
        module.fail_json(msg="state=pulled needs src and path")
    if module.check_mode:
        return {"changed": True, "files_transferred": 0, "literal_bytes": 0}
    os.makedirs(p["path"], exist_ok=True)
    argv = [
        module.get_bin_path("rsync", required=True),
        "-rlt",
        "--partial",
        "--append-verify",
        "--stats",
        f"--exclude={EXCLUDE}",
        f"--timeout={p['timeout_s']}",
    ]
    if p["address"]:
        argv.append(f"--address={p['address']}")  # the daemon answers only the allowed addresses
    if p["bwlimit_kib"]:
        argv.append(f"--bwlimit={p['bwlimit_kib']}")
    argv += [p["src"].rstrip("/") + "/", p["path"].rstrip("/") + "/"]
    rc, out, err = module.run_command(argv)
    if rc != 0:
        module.fail_json(msg=f"rsync from {p['src']} into {p['path']} exited {rc}: {err.strip()}")
    result: dict[str, Any] = {"changed": False}
    for key, pattern in STATS.items():
        found = pattern.search(out)
        result[key] = int(found.group(1).replace(",", "")) if found else 0
    result["changed"] = result["files_transferred"] > 0
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "required": True, "choices": ["serving", "stopped", "pulled"]},
            "path": {"type": "path"},
            "src": {"type": "str"},
            "address": {"type": "str"},
            "port": {"type": "int", "default": 8873},
            "allow": {"type": "list", "elements": "str", "default": []},
            "bwlimit_kib": {"type": "int", "default": 0},
            "timeout_s": {"type": "int", "default": 600},
            "run_dir": {"type": "path", "default": "/run/model-weights"},
            "log_file": {"type": "path", "default": "/var/log/model-weights-rsyncd.log"},
        },
        supports_check_mode=True,
    )
    state = module.params["state"]
    if state == "serving":
        result = serve(module)
    elif state == "pulled":
        result = pull(module)
    else:
        result = {"changed": stop(module.params["run_dir"], module.check_mode)}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
