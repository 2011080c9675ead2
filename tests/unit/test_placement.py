"""Where findings point: at a node the user wrote, or at its nearest written parent; never at a line the
user did not write (a comment above the document, the line after an empty value)."""

from __future__ import annotations

from orchestrator.pipeline import validate_text
from orchestrator.spec.findings import Position
from orchestrator.spec.loader import parse_text
from tests.helpers import load_example, to_yaml

HEADER = "# Site spec of the lab.\n# Owner: ops.\n\n"


def test_a_missing_top_level_key_points_at_the_document_not_at_the_comment_above_it() -> None:
    data = load_example("a2-single-distill")
    del data["os"]
    text = HEADER + to_yaml(data)
    missing = [f for f in validate_text(text).errors if f.path == ("os",)]
    assert [f.position for f in missing] == [Position(4, 1)]  # the first key, below the three header lines


def test_paths_through_unwritten_keys_resolve_to_the_nearest_written_parent() -> None:
    text = HEADER + "site: lab\nnetwork:\n  hccn:\n    plan: per_index\nservers:\n  - name: a\n"
    smap = parse_text(text, "s.yaml")[0].source_map  # type: ignore[union-attr]
    assert smap.locate(("network", "hccn", "subnets", 0, "cidr")) == Position(7, 5)  # 'plan:' starts hccn
    assert smap.locate(("tuning", "sysctls")) == Position(4, 1)  # no tuning: the document
    assert smap.locate(("servers", 3, "address")) == Position(9, 3)  # no servers[3]: the list
    assert smap.locate(("servers", 0, "overrides", "hccl_if_ip")) == Position(9, 5)  # servers[0]
    assert smap.locate_key(("servers", 0, "adress")) == Position(9, 5)


def test_an_empty_value_is_located_at_its_key_not_on_the_next_line() -> None:
    data = load_example("a2-single-distill")
    text = to_yaml(data).replace("  max_model_len: 32768\n", "  max_model_len:\n")
    line = text.splitlines().index("  max_model_len:") + 1
    (f,) = [f for f in validate_text(text).errors if f.path == ("serving", "max_model_len")]
    assert f.position == Position(line, 3)


def test_an_alias_is_located_where_it_is_used_and_its_content_where_it_is_written() -> None:
    text = "site: lab\nlabels: &l {rack: r1}\nservers:\n  - name: a\n    labels: *l\n"
    smap = parse_text(text, "s.yaml")[0].source_map  # type: ignore[union-attr]
    assert smap.locate(("servers", 0, "labels")) == Position(5, 13)
    assert smap.locate(("servers", 0, "labels", "rack")) == Position(2, 19)
    assert smap.locate_key(("servers", 0, "labels", "rack")) == Position(2, 13)


def test_findings_follow_the_file_top_to_bottom_with_errors_first() -> None:
    data = load_example("a2-fleet-gateway")
    for i in (0, 1, 2, 3):
        data["servers"][i]["ssh_port"] = 0
    result = validate_text(to_yaml(data))
    paths = [f.path for f in result.errors]
    assert paths == [("servers", i, "ssh_port") for i in (0, 1, 2, 3)]
    lines = [f.position.line for f in result.errors if f.position]
    assert lines == sorted(lines)
