"""ascend.npu.systemd_units against systemd's own output: tests/data/systemd/show-bookworm-252.txt is what
systemd 252.39-1~deb12u2 (Debian 12) printed for

    systemctl show --property=Id,LoadState,ActiveState,SubState,UnitFileState -- \
        ssh.service sshd.service irqbalance.service chrony.service console-getty.service docker.service

(ssh runs; sshd is its alias; irqbalance is installed and stopped; chrony is not installed; console-getty is
masked; docker runs). The module runs as Ansible runs it, with a `systemctl` on PATH that replays those
blocks for the units asked, in the order asked, as systemctl does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.unit.collection.module_runner import COLLECTIONS, MODULES

SHOW = Path(__file__).resolve().parents[1].parent / "data" / "systemd" / "show-bookworm-252.txt"
ASKED = ["ssh.service", "sshd.service", "irqbalance.service", "chrony.service", "console-getty.service",
         "docker.service"]  # fmt: skip

FAKE_SYSTEMCTL = f"""#!{sys.executable}
import sys
blocks = open({str(SHOW)!r}).read().strip().split("\\n\\n")
by_name = dict(zip({ASKED!r}, blocks))
assert sys.argv[1] == "show" and sys.argv[2].startswith("--property=") and sys.argv[3] == "--", sys.argv
print("\\n\\n".join(by_name[u] for u in sys.argv[4:]))
"""


def run(tmp_path: Path, names: list[str], check_mode: bool = False) -> dict[str, Any]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "systemctl"
    fake.write_text(FAKE_SYSTEMCTL, encoding="utf-8")
    fake.chmod(0o755)
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"names": names, "_ansible_check_mode": check_mode}}))
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": str(COLLECTIONS)}
    proc = subprocess.run([sys.executable, str(MODULES / "systemd_units.py"), str(args)], capture_output=True,
                          text=True, env=env, timeout=60, check=False)  # fmt: skip
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


@pytest.mark.parametrize("check_mode", [False, True], ids=["apply", "check"])
def test_states_keyed_by_the_names_asked_running_in_order(tmp_path: Path, check_mode: bool) -> None:
    out = run(tmp_path, ["chrony", "sshd", "docker", "irqbalance", "console-getty"], check_mode)
    assert out["changed"] is False and not out.get("failed")
    units = out["units"]
    assert out["running"] == ["sshd", "docker"]
    assert units["sshd"]["id"] == "ssh.service" and units["sshd"]["found"]  # the alias answers for its unit
    assert units["chrony"] == {
        "id": "chrony.service",
        "load_state": "not-found",
        "active_state": "inactive",
        "sub_state": "dead",
        "unit_file_state": "",
        "found": False,
        "running": False,
    }
    assert units["irqbalance"]["found"] and not units["irqbalance"]["running"]
    assert units["irqbalance"]["unit_file_state"] == "disabled"
    assert units["console-getty"]["load_state"] == "masked" and units["console-getty"]["found"]


def test_no_names_reads_nothing(tmp_path: Path) -> None:
    assert run(tmp_path, []) == {"changed": False, "units": {}, "running": [],
                                 "invocation": {"module_args": {"names": []}}}  # fmt: skip


def test_a_short_answer_from_systemctl_fails_naming_the_counts(tmp_path: Path) -> None:
    from ansible_collections.ascend.npu.plugins.modules import systemd_units

    with pytest.raises(ValueError, match=r"printed 1 unit\(s\) for 2 name\(s\)"):
        systemd_units.parse_show(SHOW.read_text().split("\n\n")[0], ["ssh", "docker"])
