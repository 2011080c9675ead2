"""The inventory plugin ascend.npu.site yields, for every example spec, what `ansible-inventory` reads from
the inventory `orchestrator render` wrote beside it (hosts, groups and every host's merged variables), and an
invalid spec fails the source with the CLI's error lines. Both through the real `ansible-inventory`, from the
checkout's root (its ansible.cfg names the collection's folder)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import EXAMPLES, ROOT

BIN = Path(sys.executable).parent
SITES = sorted(p.parent.name for p in EXAMPLES.glob("*/site.yaml"))


def inventory(source: Path, *, fail_unparsed: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANSIBLE_INVENTORY_UNPARSED_FAILED": str(fail_unparsed)}
    env.pop("ANSIBLE_CONFIG", None)  # the checkout's ansible.cfg (cwd): collections_path = collections
    return subprocess.run(
        [str(BIN / "ansible-inventory"), "-i", str(source), "--list"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def plain(value: Any) -> Any:
    """An inventory plugin's strings are untrusted in ansible-core (never templated), and `--list` shows
    them as {"__ansible_unsafe": text}; the rendered files' strings are plain. Same values either way."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def listed(source: Path) -> dict[str, Any]:
    proc = inventory(source, fail_unparsed=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data: dict[str, Any] = plain(json.loads(proc.stdout))
    for name, body in data.items():  # the order of a group's children and hosts is not the point
        if name != "_meta":
            data[name] = {k: sorted(v) if isinstance(v, list) else v for k, v in body.items()}
    return data


def source_file(folder: Path, spec: Path) -> Path:
    path = folder / "fleet.ascend_site.yml"
    path.write_text(f"plugin: ascend.npu.site\nspec: {spec}\n", encoding="utf-8")
    return path


def test_there_are_examples() -> None:
    assert len(SITES) >= 5, SITES


@pytest.mark.parametrize("site", SITES)
def test_the_plugin_yields_the_rendered_inventory(site: str, tmp_path: Path) -> None:
    rendered = listed(EXAMPLES / site / "hosts.yml")  # group_vars/ and host_vars/ beside it
    from_spec = listed(source_file(tmp_path, EXAMPLES / site / "site.yaml"))
    assert from_spec == rendered
    hostvars = rendered["_meta"]["hostvars"]
    assert hostvars and all(v.get("orchestrator_site") for v in hostvars.values())  # variables came along


def test_a_relative_spec_is_read_beside_the_source(tmp_path: Path) -> None:
    (tmp_path / "site.yaml").write_bytes((EXAMPLES / "a2-fleet-gateway" / "site.yaml").read_bytes())
    from_spec = listed(source_file(tmp_path, Path("site.yaml")))
    assert from_spec == listed(EXAMPLES / "a2-fleet-gateway" / "hosts.yml")


def test_an_invalid_spec_fails_the_source_with_the_field_line_and_fix(tmp_path: Path) -> None:
    text = (EXAMPLES / "a2-fleet-gateway" / "site.yaml").read_text(encoding="utf-8")
    assert "\nrollout:\n" in text
    (tmp_path / "site.yaml").write_text(
        text.replace("\nrollout:\n", "\nrollout:\n  max_fail_percentage: 140\n"), encoding="utf-8"
    )
    proc = inventory(source_file(tmp_path, Path("site.yaml")), fail_unparsed=True)
    assert proc.returncode != 0
    err = " ".join(proc.stderr.split())
    assert "is not a valid site spec" in err and "rollout.max_fail_percentage" in err, err
    assert "site.yaml:" in err and "fix:" in err, err
