"""Play variables without play_vars.yml beside the inventory (an inventory plugin source, an AWX / AAP job):
the playbooks fall back to playbooks/vars/play_vars_as_extra_vars.yml, which names every play variable that
`orchestrator render` writes and stops the play with a fix unless extra variables set them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.galaxy import COLLECTION, ansible_cli
from tests.helpers import ROOT

FALLBACK = COLLECTION / "playbooks" / "vars" / "play_vars_as_extra_vars.yml"
RENDERED = sorted((ROOT / "inventories").glob("*/play_vars.yml"))


def test_the_fallback_names_every_rendered_play_variable() -> None:
    names = {k for k in yaml.safe_load(FALLBACK.read_text(encoding="utf-8")) if not k.startswith("_")}
    assert len(RENDERED) >= 6
    for path in RENDERED:
        assert set(yaml.safe_load(path.read_text(encoding="utf-8"))) == names, path


def list_hosts(inventory: Path, playbook: str, *args: str) -> subprocess.CompletedProcess[str]:
    argv = ["-i", str(inventory), f"playbooks/{playbook}", "--list-hosts", *args]
    return ansible_cli("ansible-playbook", argv, ROOT)


@pytest.mark.parametrize("playbook", ["serve.yml", "drivers.yml"])
def test_without_play_vars_the_play_stops_with_a_fix_and_extra_vars_set_them(
    playbook: str, tmp_path: Path
) -> None:
    site = ROOT / "inventories" / "a2-pair-r1-w8a8"
    for part in ("hosts.yml", "group_vars", "host_vars"):  # the inventory without play_vars.yml
        (shutil.copytree if (site / part).is_dir() else shutil.copy)(site / part, tmp_path / part)
    bare = list_hosts(tmp_path / "hosts.yml", playbook)
    assert bare.returncode != 0
    assert "the play variables of the site (serial, max_fail_percentage) are not set" in bare.stderr
    assert "-e @inventories/SITE/play_vars.yml" in bare.stderr
    given = list_hosts(tmp_path / "hosts.yml", playbook, "-e", f"@{site / 'play_vars.yml'}")
    assert given.returncode == 0 and "a2-01" in given.stdout, given.stdout[-2000:] + given.stderr[-2000:]
