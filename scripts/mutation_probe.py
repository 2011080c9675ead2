#!/usr/bin/env python3
"""Mutation probe of the integration suite: four defects that a test bed which converges once and restores
saved clusters could hide. Each is applied to a scratch clone of HEAD and the integration tests that must
catch it run there.

    .venv/bin/python scripts/mutation_probe.py            # every mutation (about 40 min on 2 cores)
    .venv/bin/python scripts/mutation_probe.py --only no-firmware-reboot --keep

A mutation is caught when a test named for it fails or errors. The clone runs with this checkout's
virtualenv and PYTHONPATH pointing at the clone, so the CLI, roles and playbooks under test are the mutated
ones. Output: one line per mutation (CAUGHT / MISSED) and the tests that failed; exit 1 when a mutation was
missed or its edit no longer applies (the code it edits moved: update the probe).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SIM = "tests/integration/sim"


@dataclass(frozen=True)
class Mutation:
    name: str
    what: str
    file: str
    old: str
    new: str
    modules: tuple[str, ...]  # whole modules: a test may need its module's earlier tests
    must_catch: tuple[str, ...]  # "module.py::test_name" of the tests that have to fail


MUTATIONS = (
    Mutation(
        "no-persistent-sysctl",
        "host_tuning sets its sysctls live, then removes its persistent sysctl.d file",
        "roles/host_tuning/tasks/sysctl.yml",
        '    label: "{{ item.key }}={{ item.value }}"\n',
        '    label: "{{ item.key }}={{ item.value }}"\n\n'
        "- name: MUTATION remove the persistent sysctl file\n"
        "  ansible.builtin.file:\n"
        '    path: "{{ host_tuning_sysctl_file }}"\n'
        "    state: absent\n",
        (f"{SIM}/test_host_layer_e2e.py", f"{SIM}/test_drift.py"),
        (
            "test_host_layer_e2e.py::test_reboot_keeps_the_settings_and_check_mode_names_one_manual_edit_only",
            "test_drift.py::test_in_sync_after_converge_exits_0",
        ),
    ),
    Mutation(
        "serve-restarts-always",
        "vllm_serve restarts every replica on every apply",
        "roles/vllm_serve/tasks/state.yml",
        "{{ rollout_replicas | ascend.npu.vllm_serve_restart(hostvars, ansible_play_hosts_all) }}",
        "{{ rollout_replicas | map(attribute='name') | list }}",
        (f"{SIM}/test_serve_phase.py",),
        ("test_serve_phase.py::test_noop_reapply_restarts_nothing",),
    ),
    Mutation(
        "weights-no-full-verify",
        "model_weights never hashes every file (the size + mtime fast path only)",
        "roles/model_weights/tasks/verified.yml",
        'full: "{{ model_weights_verify_full | bool }}"',
        "full: false",
        (f"{SIM}/test_weights_phase.py",),
        ("test_weights_phase.py::test_corrupted_shard_is_caught_before_serving",),
    ),
    Mutation(
        "no-firmware-reboot",
        "npu_firmware installs the firmware but never reboots",
        "roles/npu_firmware/tasks/main.yml",
        "  ansible.builtin.import_tasks: reboot.yml\n",
        "  ansible.builtin.debug:\n    msg: MUTATION no reboot\n",
        (f"{SIM}/test_drivers_phase.py",),
        ("test_drivers_phase.py::test_fresh_converge_installs_driver_then_firmware_and_reboots",),
    ),
)


def clone(dest: Path) -> None:
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(dest)], check=True)


def apply(m: Mutation, tree: Path) -> None:
    path = tree / m.file
    text = path.read_text(encoding="utf-8")
    if text.count(m.old) != 1:
        raise SystemExit(f"{m.name}: {m.file} holds {text.count(m.old)} copies of the text to mutate, not 1")
    path.write_text(text.replace(m.old, m.new), encoding="utf-8")


def failed_tests(junit: Path) -> list[str]:
    out: list[str] = []
    if not junit.is_file():
        return out
    for case in ET.parse(junit).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            module = case.get("classname", "").rsplit(".", 1)[-1]
            out.append(f"{module}.py::{case.get('name', '').split('@')[0]}")
    return out


def probe(m: Mutation, scratch: Path) -> tuple[bool, list[str], float]:
    tree = scratch / m.name
    clone(tree)
    apply(m, tree)
    junit = scratch / f"{m.name}.xml"
    paths = (".", "ascend_sim/payloads/fake-vllm", "ascend_sim/payloads/sim-server", "collections")
    extra = os.pathsep.join(str(tree / p) for p in paths)
    env = {**os.environ, "PYTHONPATH": extra}
    started = time.monotonic()
    log = (scratch / f"{m.name}.log").open("w")
    subprocess.run(
        [
            str(REPO / ".venv" / "bin" / "pytest"), "-m", "integration", "-p", "no:cacheprovider",
            "-n", str(min(2, len(m.modules))), "--dist", "loadgroup", "--no-loadscope-reorder",
            f"--junitxml={junit}", "-q", *m.modules,
        ],
        cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT, check=False,
    )  # fmt: skip
    log.close()
    failed = failed_tests(junit)
    caught = any(any(f.startswith(t) for f in failed) for t in m.must_catch)
    return caught, failed, time.monotonic() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", choices=[m.name for m in MUTATIONS])
    ap.add_argument("--keep", action="store_true", help="keep the scratch clones and logs")
    args = ap.parse_args()
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    scratch = Path(tempfile.mkdtemp(prefix="mutation-probe-"))
    missed = 0
    try:
        for m in chosen:
            caught, failed, seconds = probe(m, scratch)
            missed += not caught
            print(f"{'CAUGHT' if caught else 'MISSED'} {m.name}: {m.what} ({seconds:.0f} s)")
            print(f"  must fail: {', '.join(m.must_catch)}")
            print(f"  failed:    {', '.join(failed) or 'nothing'}", flush=True)
    finally:
        if args.keep:
            print(f"scratch clones and logs: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
