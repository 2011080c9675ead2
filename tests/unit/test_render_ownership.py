"""Render never destroys what it did not write: a manifest of its own files decides what it may touch."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.pipeline import ValidationResult, validate_file, validate_text
from orchestrator.render import RenderConflict, render, render_inventory, render_texts
from orchestrator.render.manifest import (
    MANIFEST,
    build_manifest,
    file_state,
    ownable,
    read_manifest,
    sha256_text,
)
from tests.helpers import PATIENCE_S

ROOT = Path(__file__).resolve().parents[2]
FLEET = ROOT / "inventories" / "a2-fleet-gateway" / "site.yaml"
BIN = Path(sys.executable).parent

# Files an operator keeps beside the inventory; none of them is render's.
USER_FILES = {
    "group_vars/vault.yml": "$ANSIBLE_VAULT;1.1;AES256\n6162636465666768\n",
    "group_vars/custom.yml": "ntp_server: 10.0.0.1\n",
    "group_vars/all/vault.yml": "vault_registry_password: hunter2\n",
    "host_vars/extra.yml": "extra_var: 1\n",
    "README.md": "# our site\n",
}


def _valid(result: ValidationResult) -> ValidationResult:
    assert result.ok, [f.message for f in result.errors]
    return result


def _fleet(without: str | None = None) -> ValidationResult:
    if without is None:
        return _valid(validate_file(FLEET))
    data: dict[str, Any] = yaml.safe_load(FLEET.read_text(encoding="utf-8"))
    data["servers"] = [s for s in data["servers"] if s["name"] != without]
    data["serving"]["replicas"] = [r for r in data["serving"]["replicas"] if r["servers"] != [without]]
    return _valid(validate_text(yaml.safe_dump(data, sort_keys=False)))


def _put(folder: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _expected(result: ValidationResult) -> dict[str, bytes]:
    return {rel: text.encode() for rel, text in render_texts(result).items()}


def _manifest(folder: Path) -> dict[str, Any]:
    data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_user_files_survive_two_renders_and_a_removed_servers_host_vars_goes(tmp_path: Path) -> None:
    _put(tmp_path, USER_FILES)
    full = _fleet()
    render(full, tmp_path)
    render(full, tmp_path)
    assert (tmp_path / "host_vars" / "a2-04.yml").is_file()
    smaller = _fleet(without="a2-04")
    outcome = render_inventory(smaller, tmp_path)
    assert (outcome.removed, outcome.forced) == (("host_vars/a2-04.yml",), ())
    snap = _snapshot(tmp_path)
    for rel, text in USER_FILES.items():
        assert snap.pop(rel) == text.encode(), f"{rel} was changed or removed"
    manifest = snap.pop(MANIFEST)
    assert snap == _expected(smaller)
    assert json.loads(manifest)["files"] == {
        rel: sha256_text(text) for rel, text in render_texts(smaller).items()
    }
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".render-")]


def test_manifest_records_the_spec_and_every_file(tmp_path: Path) -> None:
    result = _fleet()
    render(result, tmp_path)
    data = _manifest(tmp_path)
    assert result.document is not None
    assert (data["spec"], data["spec_sha256"]) == ("site.yaml", result.document.sha256)
    assert sorted(data["files"]) == sorted(
        ["hosts.yml", "ansible.cfg", "play_vars.yml", "group_vars/all.yml", "group_vars/npu.yml"]
        + [f"host_vars/{h}.yml" for h in ("a2-01", "a2-02", "a2-03", "a2-04", "edge-01")]
    )
    for rel, sha in data["files"].items():
        assert sha == sha256_text((tmp_path / rel).read_text(encoding="utf-8"))


def test_a_file_of_the_users_with_the_name_render_needs_is_refused_even_with_force(tmp_path: Path) -> None:
    _put(tmp_path, {"host_vars/a2-02.yml": "my_own: true\n"})
    before = _snapshot(tmp_path)
    for force in (False, True):
        with pytest.raises(RenderConflict) as info:
            render_inventory(_fleet(), tmp_path, force=force)
        assert _snapshot(tmp_path) == before, "a refused render changed the folder"
        assert [p.rel for p in info.value.problems] == ["host_vars/a2-02.yml"]
        text = str(info.value)
        assert "host_vars/a2-02.yml: exists and was not written by render" in text
        assert "fix: move or rename it" in text and "nothing was changed" in text


def test_a_hand_edited_file_is_refused_unless_forced(tmp_path: Path) -> None:
    result = _fleet()
    render(result, tmp_path)
    edited = tmp_path / "host_vars" / "a2-01.yml"
    edited.write_text(edited.read_text(encoding="utf-8") + "hotfix_var: 1\n", encoding="utf-8")
    before = _snapshot(tmp_path)
    changed = _changed()
    with pytest.raises(RenderConflict) as info:
        render_inventory(changed, tmp_path)
    assert _snapshot(tmp_path) == before
    assert [(p.rel, p.reason) for p in info.value.problems] == [
        ("host_vars/a2-01.yml", "was changed by hand since render wrote it")
    ]
    assert "--force" in info.value.problems[0].fix
    outcome = render_inventory(changed, tmp_path, force=True)
    assert outcome.forced == ("host_vars/a2-01.yml",)
    assert "hotfix_var" not in edited.read_text(encoding="utf-8")
    assert {k: v for k, v in _snapshot(tmp_path).items() if k != MANIFEST} == _expected(changed)


def _changed() -> ValidationResult:
    text = FLEET.read_text(encoding="utf-8").replace("max_num_seqs: 24", "max_num_seqs: 20")
    return _valid(validate_text(text))


def test_an_edit_that_render_would_write_anyway_is_no_conflict(tmp_path: Path) -> None:
    render(_fleet(), tmp_path)
    changed = _changed()
    (tmp_path / "hosts.yml").write_text(render_texts(changed)["hosts.yml"], encoding="utf-8")
    outcome = render_inventory(changed, tmp_path)
    assert "hosts.yml" not in outcome.written and "group_vars/all.yml" in outcome.written
    assert outcome.forced == ()


def test_a_hand_edited_file_of_a_removed_server_is_kept_unless_forced(tmp_path: Path) -> None:
    render(_fleet(), tmp_path)
    stale = tmp_path / "host_vars" / "a2-04.yml"
    stale.write_text("# notes about a2-04 before it went for repair\n", encoding="utf-8")
    smaller = _fleet(without="a2-04")
    with pytest.raises(RenderConflict, match=r"host_vars/a2-04\.yml: is no longer part of the inventory"):
        render_inventory(smaller, tmp_path)
    assert stale.is_file()
    with pytest.raises(RenderConflict) as info:
        render_inventory(smaller, tmp_path)
    assert [p.fix for p in info.value.problems] == [
        "keep what you need from it in a file of your own, then render again with --force (which removes it)"
    ]
    outcome = render_inventory(smaller, tmp_path, force=True)
    assert (outcome.removed, outcome.forced) == (("host_vars/a2-04.yml",), ("host_vars/a2-04.yml",))
    assert not stale.exists()


def test_a_folder_rendered_before_manifests_adopts_files_with_the_generated_header(tmp_path: Path) -> None:
    full = _fleet()
    _put(tmp_path, render_texts(full))  # what an older render left: no manifest
    _put(tmp_path, USER_FILES)
    smaller = _fleet(without="a2-04")
    outcome = render_inventory(smaller, tmp_path)
    assert outcome.removed == ("host_vars/a2-04.yml",)
    for rel, text in USER_FILES.items():
        assert (tmp_path / rel).read_text(encoding="utf-8") == text
    assert sorted(_manifest(tmp_path)["files"]) == sorted(render_texts(smaller))


def test_manifest_entries_outside_the_inventory_files_are_ignored(tmp_path: Path) -> None:
    inventory = tmp_path / "inventory"
    outside = tmp_path / "precious.yml"
    outside.write_text("keep me\n", encoding="utf-8")
    custom = inventory / "group_vars" / "custom.yml"
    _put(inventory, {"group_vars/custom.yml": "mine: 1\n"})
    hostile = {
        "files": {
            "../precious.yml": sha256_text("keep me\n"),
            "group_vars/../../precious.yml": sha256_text("keep me\n"),
            "README.md": sha256_text("x"),
            "group_vars/custom.yml": "not-a-sha",
        }
    }
    (inventory / MANIFEST).write_text(json.dumps(hostile), encoding="utf-8")
    render(_fleet(), inventory)
    assert outside.read_text(encoding="utf-8") == "keep me\n"
    assert custom.read_text(encoding="utf-8") == "mine: 1\n"


def test_an_unchanged_rerender_touches_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _fleet()
    render(result, tmp_path)
    calls: list[Any] = []
    real = os.replace
    monkeypatch.setattr("orchestrator.render.writer.os.replace", lambda a, b: (calls.append(a), real(a, b)))
    outcome = render_inventory(result, tmp_path)
    assert (outcome.written, outcome.removed, calls) == ((), (), [])


def test_failing_step_of_a_render_with_user_files_and_a_removal_keeps_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inventory = tmp_path / "inventory"
    render(_fleet(), inventory)
    _put(inventory, USER_FILES)
    before = _snapshot(inventory)
    smaller = _fleet(without="a2-04")
    real = os.replace
    calls: list[str] = []
    fail_at = 0

    def flaky(src: Any, dst: Any) -> None:
        calls.append(str(dst))
        if len(calls) == fail_at:
            raise OSError(f"disk went away at os.replace #{fail_at}")
        real(src, dst)

    monkeypatch.setattr("orchestrator.render.writer.os.replace", flaky)
    # 9 files change (their header names the spec's sha256, ansible.cfg its host count too): each moved
    # aside and replaced; the removed host_vars/a2-04.yml is only moved aside; the manifest is replaced last
    steps = 2 * 9 + 1 + 2
    for fail_at in range(1, steps + 1):
        calls.clear()
        with pytest.raises(OSError, match="disk went away"):
            render(smaller, inventory)
        assert _snapshot(inventory) == before, f"failure at os.replace #{fail_at} changed the folder"
        assert not [p for p in inventory.iterdir() if p.name.startswith(".render-")]
    calls.clear()
    fail_at = 0
    render(smaller, inventory)
    assert len(calls) == steps


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ORCHESTRATOR_DEBUG"}
    env.update({"NO_COLOR": "1", "COLUMNS": "250"})
    return subprocess.run(
        [str(BIN / "orchestrator"), "render", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=PATIENCE_S,
        check=False,
    )


def test_cli_refuses_with_exit_73_and_force_replaces_with_a_warning(tmp_path: Path) -> None:
    assert _cli(str(FLEET), "--out", str(tmp_path)).returncode == 0
    edited = tmp_path / "group_vars" / "all.yml"
    edited.write_text(edited.read_text(encoding="utf-8") + "# pinned during the incident\n", encoding="utf-8")
    refused = _cli(str(FLEET), "--out", str(tmp_path))
    assert refused.returncode == 73, refused.stderr
    assert f"render: refusing to write into {tmp_path}; nothing was changed:" in refused.stderr
    assert "group_vars/all.yml: was changed by hand since render wrote it" in refused.stderr
    assert "Traceback" not in refused.stderr
    forced = _cli(str(FLEET), "--out", str(tmp_path), "--force")
    assert forced.returncode == 0, forced.stderr
    assert f"warning: {edited} was edited by hand; replaced or removed (--force)" in forced.stderr
    assert "incident" not in edited.read_text(encoding="utf-8")


def test_manifest_text_is_stable_json() -> None:
    sha = "ab" * 32
    hosts, all_vars = "all: {}\n", "x: 1\n"
    text = build_manifest({"hosts.yml": hosts, "group_vars/all.yml": all_vars}, "site.yaml", sha).text()
    assert text == (
        "{\n"
        '  "generator": "orchestrator render",\n'
        '  "manifest_version": 1,\n'
        '  "spec": "site.yaml",\n'
        f'  "spec_sha256": "{sha}",\n'
        '  "files": {\n'
        f'    "group_vars/all.yml": "{_sha(all_vars)}",\n'
        f'    "hosts.yml": "{_sha(hosts)}"\n'
        "  }\n"
        "}\n"
    )


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_file_states(tmp_path: Path) -> None:
    header = "# Generated by `orchestrator render` from site.yaml (sha256 0).\nx: 1\n"
    _put(
        tmp_path,
        {
            "host_vars/recorded.yml": "a: 1\n",
            "host_vars/edited.yml": "a: 2\n",
            "host_vars/headed.yml": header,
            "host_vars/mine.yml": "mine: 1\n",
            "host_vars/latin1.yml": "",
            "target.txt": header,
        },
    )
    (tmp_path / "host_vars" / "latin1.yml").write_bytes(b"caf\xe9: 1\n")
    (tmp_path / "host_vars" / "link.yml").symlink_to(tmp_path / "target.txt")
    (tmp_path / "host_vars" / "folder.yml").mkdir()
    manifest = {"host_vars/recorded.yml": _sha("a: 1\n"), "host_vars/edited.yml": _sha("a: 1\n")}
    states = {
        name: file_state(tmp_path, f"host_vars/{name}.yml", "new: 1\n", manifest)
        for name in ("absent", "recorded", "edited", "headed", "mine", "latin1", "link", "folder")
    }
    assert states == {
        "absent": "absent",
        "recorded": "owned",
        "edited": "edited",
        "headed": "owned",
        "mine": "foreign",
        "latin1": "foreign",
        "link": "foreign",
        "folder": "foreign",
    }
    assert file_state(tmp_path, "host_vars/mine.yml", "mine: 1\n", manifest) == "same"
    assert file_state(tmp_path, "host_vars/edited.yml", "a: 1\n", None) == "foreign"


def test_ownable_paths() -> None:
    good = ["hosts.yml", "ansible.cfg", "play_vars.yml", "group_vars/all.yml", "host_vars/a2-01.yml"]
    good += ["group_vars/rollout_default.yml"]
    bad = ["../hosts.yml", "hosts.yml\n", "../ansible.cfg", "host_vars/ansible.cfg", "group_vars/../../x.yml"]
    bad += ["group_vars/all/vault.yml", "site.yaml"]
    bad += ["host_vars/.hidden.yml", "README.md", "group_vars/all.yaml", "/etc/hosts.yml"]
    assert [r for r in good if not ownable(r)] == []
    assert [r for r in bad if ownable(r)] == []


def test_a_legacy_folder_loses_its_stale_generated_files_in_both_vars_folders(tmp_path: Path) -> None:
    header = "# Generated by `orchestrator render` from site.yaml (sha256 0).\n"
    _put(tmp_path, render_texts(_fleet()))
    _put(tmp_path, {"group_vars/rollout_old.yml": header + "x: 1\n"})
    outcome = render_inventory(_fleet(without="a2-04"), tmp_path)
    assert outcome.removed == ("group_vars/rollout_old.yml", "host_vars/a2-04.yml")
    assert outcome.forced == ()


def test_with_a_manifest_a_copy_of_a_generated_file_under_another_name_is_kept(tmp_path: Path) -> None:
    render(_fleet(), tmp_path)
    copy = tmp_path / "host_vars" / "template.yml"
    copy.write_text((tmp_path / "host_vars" / "a2-01.yml").read_text(encoding="utf-8"), encoding="utf-8")
    outcome = render_inventory(_fleet(without="a2-04"), tmp_path)
    assert outcome.removed == ("host_vars/a2-04.yml",)
    assert copy.is_file()


def test_a_broken_manifest_falls_back_to_the_header(tmp_path: Path) -> None:
    render(_fleet(), tmp_path)
    for broken in ("{not json", "[]", '{"files": []}', "\xff"):
        (tmp_path / MANIFEST).write_text(broken, encoding="latin-1")
        assert read_manifest(tmp_path) is None
    (tmp_path / "host_vars" / "extra.yml").write_text("mine: 1\n", encoding="utf-8")
    outcome = render_inventory(_fleet(without="a2-04"), tmp_path)
    assert outcome.removed == ("host_vars/a2-04.yml",)
    assert (tmp_path / "host_vars" / "extra.yml").is_file()
    assert sorted(_manifest(tmp_path)["files"]) == sorted(render_texts(_fleet(without="a2-04")))
