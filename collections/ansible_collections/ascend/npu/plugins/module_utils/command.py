# Copyright: ascend-orchestrator contributors
# Apache-2.0 (see the repository's pyproject.toml)
"""Run a short read-only command on the managed host and read its output to the end.

The collection's modules use `execute` instead of AnsibleModule.run_command for the Ascend CLIs (npu-smi,
hccn_tool): run_command's read loop ends as soon as the command has exited after a select() that waited its
1 s timeout with nothing to read, without reading what the command wrote in between (ansible/ansible#51393,
still so in ansible-core 2.19). A loaded host does exactly that: a call silent for over a second writes and
exits while the module waits for a CPU, and run_command returns exit code 0 with an empty stdout. Only for
commands that leave no process holding their output open (not for daemons)."""

from __future__ import annotations

import os
import subprocess


def execute(argv: list[str], env_update: dict[str, str] | None = None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr); a command that cannot be started is 127 with the reason, as in a shell."""
    env = dict(os.environ, **env_update) if env_update else None
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, check=False, env=env)
    except OSError as exc:
        return 127, "", f"cannot run {argv[0]}: {exc.strerror or exc}"
    out, err = (b.decode("utf-8", "surrogateescape") for b in (proc.stdout, proc.stderr))
    return proc.returncode, out, err
