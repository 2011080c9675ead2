"""`orchestrator migrate`: a format-0 spec rewritten in place as format 1, byte for byte as written by hand in
tests/data/migrate/, and the errors validation gives a spec without spec_version or of a newer format."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
import yaml

from orchestrator.cli.findings_json import result_json
from orchestrator.pipeline import validate_text
from orchestrator.spec.findings import Position
from orchestrator.spec.migrate import MigrateError, migrate_text
from tests.helpers import ROOT, run_cli

DATA = ROOT / "tests" / "data" / "migrate"
FORMAT0 = (DATA / "format0-site.yaml").read_text(encoding="utf-8")
FORMAT1 = (DATA / "format1-site.yaml").read_text(encoding="utf-8")


def test_a_format_0_spec_becomes_the_hand_written_format_1_file() -> None:
    migration = migrate_text(FORMAT0)
    assert (migration.from_version, migration.to_version) == (0, 1)
    assert migration.text == FORMAT1
    assert migration.reformatted == ()
    assert [c.line() for c in migration.changes] == [
        "spec_version: added as the first key: 1",
        "gateway.policy: 'least_outstanding' -> 'sticky_least_loaded' (the closest equivalent: the least "
        "loaded replica, requests carrying a session id stay on theirs; 'round_robin', the default, is the "
        "other choice)",
        "image.base_os: 'ubuntu22.04' -> 'ubuntu' (the OS family; the vllm-ascend release picks ubuntu22.04)",
    ]


def test_the_migrated_spec_validates_clean_and_needs_no_second_migration() -> None:
    result = validate_text(FORMAT1, "site.yaml")
    assert result.ok and not result.findings, [str(f) for f in result.findings]
    assert result.spec is not None and result.spec.spec_version == 1
    again = migrate_text(FORMAT1)
    assert not again.needed and again.changes == () and again.text == FORMAT1


def test_a_spec_without_spec_version_gets_one_error_with_path_line_and_fix() -> None:
    result = validate_text("# a comment\n\nsite: lab\nservers: []\n", "site.yaml")
    found = [f for f in result.errors if f.path == ("spec_version",)]
    assert len(found) == 1, [str(f) for f in result.findings]
    f = found[0]
    assert f.position == Position(3, 1)  # the top of the document: its first key
    assert "no spec_version: it is spec format 0" in f.message and "reads spec format 1" in f.message
    assert f.fix == "run `orchestrator migrate SITE` (rewrites it in place, keeping comments and order)"
    assert result.spec_format == 0


def test_the_format_0_example_reports_its_old_values_with_the_migrate_hint() -> None:
    result = validate_text(FORMAT0, "site.yaml")
    by_path = {f.path: f for f in result.errors}
    assert sorted(by_path) == [("gateway", "policy"), ("image", "base_os"), ("spec_version",)]
    policy, base_os = by_path[("gateway", "policy")], by_path[("image", "base_os")]
    assert policy.position == Position(22, 11) and base_os.position == Position(25, 12)
    assert "its closest equivalent is 'sticky_least_loaded'" in policy.message
    assert policy.fix is not None and policy.fix.endswith(
        "In a spec of format 0 (no spec_version), `orchestrator migrate SITE` writes 'sticky_least_loaded' "
        "here and rewrites the rest in place"
    )
    assert "names the OS family now, 'ubuntu'" in base_os.message
    assert base_os.fix == (
        "write the OS family of the CANN base image: ubuntu or openeuler. In a spec of format 0 (no "
        "spec_version), `orchestrator migrate SITE` writes 'ubuntu' here and rewrites the rest in place"
    )


def test_a_newer_format_is_refused_with_the_formats_this_release_reads() -> None:
    result = validate_text(FORMAT1.replace("spec_version: 1", "spec_version: 7"), "site.yaml")
    assert [f.path for f in result.findings] == [("spec_version",)]  # nothing else is read
    f = result.findings[0]
    assert f.position == Position(6, 15)
    assert f.message == "spec format 7 is newer than this release of orchestrator reads (spec format 1)"
    assert f.fix is not None and f.fix.startswith("upgrade orchestrator to a release that reads this format")
    with pytest.raises(MigrateError, match="spec format 7 is newer"):
        migrate_text(FORMAT1.replace("spec_version: 1", "spec_version: 7"))


@pytest.mark.parametrize("value", ['"1"', "true", "1.0", "-1"])
def test_a_spec_version_that_is_not_a_format_is_refused(value: str) -> None:
    text = FORMAT1.replace("spec_version: 1", f"spec_version: {value}")
    assert not validate_text(text, "site.yaml").ok
    with pytest.raises(MigrateError, match="not a spec format"):
        migrate_text(text)


def test_schema_version_of_format_0_becomes_spec_version_on_its_line() -> None:
    text = "# head\nsite: lab  # the name\nschema_version: 1  # never read\nservers: []\n"
    migration = migrate_text(text)
    assert migration.text == "# head\nsite: lab  # the name\nspec_version: 1    # never read\nservers: []\n"
    assert [c.line() for c in migration.changes] == [
        "schema_version: removed (never read); spec_version takes its line",
        "spec_version: set to 1, where schema_version was",
    ]


def test_an_explicit_format_0_is_migrated_too() -> None:
    text = "site: lab\nspec_version: 0  # kept\nservers: []\n"
    result = validate_text(text, "site.yaml")
    found = [f for f in result.errors if f.path == ("spec_version",)]
    assert [f.message for f in found] == [
        "spec_version: 0 is spec format 0 (written before spec formats were numbered); this release reads "
        "spec format 1"
    ]
    migration = migrate_text(text)
    assert migration.text == "site: lab\nspec_version: 1  # kept\nservers: []\n"
    assert [c.line() for c in migration.changes] == ["spec_version: 0 -> 1"]


def test_the_file_s_indentation_is_kept() -> None:
    text = "site: lab\nservers:\n- name: a\n  roles:\n  - npu\nprofiles:\n    p:\n        chip: 910B3\n"
    assert migrate_text(text).text == "spec_version: 1\n" + text


def test_formatting_ruamel_writes_differently_is_named() -> None:
    migration = migrate_text("site:    lab\nservers: [ a ]\nimage: {base_os: openeuler24.03}\n")
    assert migration.text == "spec_version: 1\nsite: lab\nservers: [a]\nimage: {base_os: openeuler}\n"
    assert migration.reformatted == (1, 2)  # line 3 holds a change of the migration


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("site: lab\nservers: [a\n", "YAML syntax error"),
        ("- a\n- b\n", "must be a YAML mapping"),
        ("site: a\nsite: b\n", 'duplicate key "site"'),
    ],
)
def test_unreadable_yaml_is_a_sentence_with_a_fix(text: str, message: str) -> None:
    with pytest.raises(MigrateError) as caught:
        migrate_text(text)
    assert message in caught.value.message and caught.value.fix


# -------------------------------------------------------------------------------------------- the command
def _spec(tmp_path: Path, text: str = FORMAT0, mode: int = 0o640) -> Path:
    path = tmp_path / "lab-old" / "site.yaml"  # the folder named as the site: no warning
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def test_check_prints_the_changes_exits_1_and_writes_nothing(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    out = run_cli("migrate", "--check", str(spec))
    assert out.returncode == 1, out.stderr
    assert out.stdout.startswith(f"{spec}: would migrate spec format 0 -> 1\n")
    assert "  spec_version: added as the first key: 1\n" in out.stdout
    assert "  gateway.policy: 'least_outstanding' -> 'sticky_least_loaded' (the closest" in out.stdout
    assert "  image.base_os: 'ubuntu22.04' -> 'ubuntu'" in out.stdout
    assert spec.read_text(encoding="utf-8") == FORMAT0
    assert sorted(p.name for p in spec.parent.iterdir()) == ["site.yaml"]


def test_migrate_rewrites_in_place_keeps_the_mode_and_validates(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    inode = spec.stat().st_ino
    out = run_cli("migrate", str(spec))
    assert out.returncode == 0, out.stderr
    assert spec.read_text(encoding="utf-8") == FORMAT1
    assert stat.S_IMODE(spec.stat().st_mode) == 0o640
    assert spec.stat().st_ino != inode  # replaced by rename, not written over
    assert sorted(p.name for p in spec.parent.iterdir()) == ["site.yaml"]  # no temporary file left
    assert f"{spec}: migrating spec format 0 -> 1\n" in out.stdout
    assert f"{spec}: now spec format 1\n" in out.stdout
    assert f"{spec}: valid (spec format 1, 0 warning(s))" in out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    for args in (("migrate", str(spec)), ("migrate", "--check", str(spec))):
        again = run_cli(*args)
        assert again.returncode == 0, again.stderr
        assert again.stdout == f"{spec}: spec format 1, nothing to migrate\n"
    assert spec.read_text(encoding="utf-8") == FORMAT1


def test_migrate_through_a_symlink_rewrites_its_target(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    link = tmp_path / "link.yaml"
    link.symlink_to(spec)
    assert run_cli("migrate", str(link)).returncode == 0
    assert link.is_symlink() and spec.read_text(encoding="utf-8") == FORMAT1


def test_a_migrated_spec_that_is_still_invalid_exits_2(tmp_path: Path) -> None:
    spec = _spec(tmp_path, FORMAT0.replace("tp: 4", "tp: 3"))
    out = run_cli("migrate", str(spec))
    assert out.returncode == 2
    assert "spec_version: 1" in spec.read_text(encoding="utf-8")  # migrated all the same
    assert "INVALID: " in out.stderr and "(spec format 1)" in out.stderr


def test_unreadable_yaml_exits_2_with_the_fix_and_no_trace(tmp_path: Path) -> None:
    broken = "site: lab\nservers: [a\n"
    spec = _spec(tmp_path, broken)
    out = run_cli("migrate", str(spec))
    assert out.returncode == 2
    assert f"{spec}:3:1: error: (document): YAML syntax error: " in out.stderr
    assert "\n    fix: " in out.stderr and "not migrated; nothing was written" in out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    assert spec.read_text(encoding="utf-8") == broken


def test_a_newer_format_exits_2_naming_the_version(tmp_path: Path) -> None:
    spec = _spec(tmp_path, FORMAT1.replace("spec_version: 1", "spec_version: 2"))
    out = run_cli("migrate", str(spec))
    assert out.returncode == 2
    assert f"{spec}:6:15: error: spec_version: spec format 2 is newer than this release" in out.stderr
    assert "upgrade orchestrator" in out.stderr


def test_validate_names_the_format_it_read(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    out = run_cli("validate", str(spec))
    assert out.returncode == 2
    assert f"{spec}:6:1: error: spec_version: this spec has no spec_version" in out.stderr
    fix = "fix: run `orchestrator migrate SITE` (rewrites it in place, keeping comments and order)"
    assert fix in out.stderr
    assert "INVALID: 3 error(s), 0 warning(s) (spec format 0)" in out.stderr


# ---------------------------------------------------------------------------------------- the examples
EXAMPLES = sorted((ROOT / "inventories").glob("*/site.yaml"))


@pytest.mark.parametrize("spec", EXAMPLES, ids=lambda p: p.parent.name)
def test_every_example_is_of_the_current_format_written_first(spec: Path) -> None:
    text = spec.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert data["spec_version"] == 1
    assert next(iter(data)) == "spec_version"
    assert not migrate_text(text).needed


def test_validate_json_names_the_format_it_read() -> None:
    assert json.loads(result_json(validate_text(FORMAT1, "site.yaml")))["spec_version"] == 1
    assert json.loads(result_json(validate_text(FORMAT0, "site.yaml")))["spec_version"] == 0
    assert json.loads(result_json(validate_text("site: [\n", "site.yaml")))["spec_version"] is None
