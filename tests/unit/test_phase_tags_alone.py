"""Every phase tag runs alone with plain ansible-playbook (docs/playbooks.md:
`ansible-playbook -i inventories/<site>/hosts.yml playbooks/site.yml --tags P [--check --diff]`).

With `--tags P`, the plays of every other phase still run their `always` parts: the inventory checks, each
role's argument validation (ansible-core adds it tagged `always`; it templates the role's defaults and
rendered variables) and the phase-done record. Their fact gathering does not run (a tagged play gathers
only when its tag is selected), so a default that reads ansible_facts, or a rendered null that the
argument spec refuses, fails every other phase's run. Running site.yml with a tag that selects no phase
runs exactly those parts for every play of every phase, on each example inventory (CASES); no task
connects to a host (the `always` tasks are controller-side actions)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SITES = sorted(p.parent.name for p in (REPO / "inventories").glob("*/hosts.yml"))
NO_PHASE = "no-phase-selected"


def _phase_playbooks() -> list[str]:
    site = yaml.safe_load((REPO / "playbooks" / "site.yml").read_text())
    return [play["import_playbook"] for play in site]


def test_every_play_of_a_phase_carries_its_phase_tag_or_always() -> None:
    """What `--tags P` selects is P's plays only: each phase playbook's own plays are tagged with its
    phase name, the imported boilerplate and phase-done plays with `always`."""
    for name in _phase_playbooks():
        phase = name.removesuffix(".yml")
        for play in yaml.safe_load((REPO / "playbooks" / name).read_text()):
            imported = play.get("ansible.builtin.import_playbook")
            first = yaml.safe_load((REPO / "playbooks" / imported).read_text())[0] if imported else play
            assert first.get("tags") in ([phase], ["always"]), (name, play.get("name"))


# check mode on every example (what the always parts do is the same in apply mode; every tag in apply mode
# on a simulated server: tests/integration/sim/test_status_served.py)
CASES = [(site, ["--check", "--diff"]) for site in SITES]


@pytest.mark.parametrize(("site", "mode"), CASES, ids=[f"{s}-{'check' if m else 'apply'}" for s, m in CASES])
def test_the_other_phases_pass_when_one_phase_runs_alone(site: str, mode: list[str]) -> None:
    inventory = REPO / "inventories" / site / "hosts.yml"
    proc = subprocess.run(
        [
            str(BIN / "ansible-playbook"),
            *("-i", str(inventory), str(REPO / "playbooks" / "site.yml"), "--tags", NO_PHASE, *mode),
            # nothing may reach a host: a task that would connect runs against this machine and fails
            *("-e", "ansible_connection=local", "-e", "ansible_become=false"),
        ],
        cwd=REPO,
        env={
            **os.environ,
            "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_LOCAL_TEMP": "/tmp/ansible-local-unit",
        },
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "changed=0" in proc.stdout and "failed=" in proc.stdout
    for line in proc.stdout.splitlines():
        if line.startswith("TASK ["):  # only the always-tagged parts ran
            assert any(word in line for word in ("Validating arguments", "Inventory |", "Phase | record")), (
                line
            )
