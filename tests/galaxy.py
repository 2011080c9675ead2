"""Build the ascend.npu collection with `ansible-galaxy collection build` and install the tarball offline, as
an operator does without the checkout (unit and integration tests share this)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import PATIENCE_S, ROOT

BIN = Path(sys.executable).parent
COLLECTION = ROOT / "collections" / "ansible_collections" / "ascend" / "npu"


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without ANSIBLE_* settings: nothing points Ansible at the checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    return {**env, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0", **extra}


def ansible_cli(tool: str, args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """An Ansible command-line tool of this Python, in `cwd`, with clean_env(**env); not checked."""
    return subprocess.run(
        [str(BIN / tool), *args],
        cwd=cwd,
        env=clean_env(**env),
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
        check=False,
    )


def galaxy(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """ansible-galaxy run from `cwd`, outside the checkout (whose ansible.cfg adds its collections)."""
    proc = ansible_cli("ansible-galaxy", args, cwd)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc


def build(out: Path) -> Path:
    """`ansible-galaxy collection build` of the checkout's collection; the tarball's path."""
    out.mkdir(parents=True, exist_ok=True)
    galaxy(["collection", "build", str(COLLECTION), "--output-path", str(out)], out)
    (tarball,) = out.glob("ascend-npu-*.tar.gz")
    return tarball


def install(tarball: Path, dest: Path) -> Path:
    """`ansible-galaxy collection install --offline -p DEST TARBALL`; the installed collection's folder."""
    dest.mkdir(parents=True, exist_ok=True)
    galaxy(["collection", "install", "--offline", "-p", str(dest), str(tarball)], dest)
    return dest / "ansible_collections" / "ascend" / "npu"
