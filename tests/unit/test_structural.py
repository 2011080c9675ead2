"""Structural validation: pydantic errors translated into findings with paths, positions, suggestions."""

from __future__ import annotations

import copy
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from ruamel.yaml import YAML

from orchestrator.pipeline import ValidationResult, validate_text
from orchestrator.spec.findings import Finding, format_finding, format_path
from orchestrator.spec.hardware import HardwareProfile, ServerOverrides
from orchestrator.spec.serving import Replica
from orchestrator.spec.site import SiteSpec
from orchestrator.spec.structural import model_at, validate_structure

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_FILES = sorted((ROOT / "inventories").glob("*/site.yaml"))
Data = dict[str, Any]
Mutation = Callable[[Data], None]


def example(name: str) -> Data:
    data = YAML(typ="safe").load((ROOT / "inventories" / name / "site.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def dump(data: Data) -> str:
    yaml = YAML(typ="safe")
    yaml.default_flow_style = False
    buf = io.StringIO()
    yaml.dump(data, buf)
    return buf.getvalue()


def mutated(name: str, *mutations: Mutation) -> Data:
    data = copy.deepcopy(example(name))
    for mutate in mutations:
        mutate(data)
    return data


def structural(name: str, *mutations: Mutation) -> list[Finding]:
    spec, findings = validate_structure(mutated(name, *mutations))
    assert spec is None and findings, "the mutation did not make the spec invalid"
    return findings


def located(name: str, *mutations: Mutation) -> ValidationResult:
    return validate_text(dump(mutated(name, *mutations)), "site.yaml")


def put(*path: str | int, value: Any) -> Mutation:
    def mutate(data: Data) -> None:
        node: Any = data
        for part in path[:-1]:
            node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
        node[path[-1]] = value

    return mutate


def drop(*path: str | int) -> Mutation:
    def mutate(data: Data) -> None:
        node: Any = data
        for part in path[:-1]:
            node = node[part]
        del node[path[-1]]

    return mutate


def only(findings: list[Finding]) -> Finding:
    assert len(findings) == 1, [format_finding(f, "site.yaml") for f in findings]
    return findings[0]


# -------------------------------------------------------------------------------------------- valid


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.parent.name for p in EXAMPLE_FILES])
def test_examples_are_structurally_valid(path: Path) -> None:
    spec, findings = validate_structure(example(path.parent.name))
    assert findings == []
    assert isinstance(spec, SiteSpec) and spec.site == path.parent.name


def test_valid_spec_is_frozen_and_defaults_are_filled() -> None:
    spec, _ = validate_structure(example("a2-single-distill"))
    assert spec is not None
    assert spec.serving.port == 8000 and spec.monitoring.node_exporter_port == 9100
    assert spec.tuning.sysctls["vm.swappiness"] == 0
    with pytest.raises(ValidationError):
        spec.serving.port = 9000  # type: ignore[misc]


def test_free_form_mappings_accept_any_key() -> None:
    data = mutated(
        "a2-single-distill",
        put("servers", 0, "labels", value={"rack": "r7", "any-label": "x"}),
        put("tuning", "sysctls", value={"net.core.somaxconn": 4096, "vm.max_map_count": "262144"}),
        put("image", "build_args", value={"PIP_INDEX_URL": "https://pypi.example.com/simple"}),
    )
    assert validate_structure(data)[1] == []


# ------------------------------------------------------------------------------------ all at once


def test_independent_mistakes_are_all_reported_at_once() -> None:
    mistakes = {
        "site": put("site", value="A2_Lab"),
        "profiles.atlas-800t-a2.cards": put("profiles", "atlas-800t-a2", "cards", value="eight"),
        "os.distro": put("os", "distro", value="ubunto"),
        "software.driver.sha256": put("software", "driver", "sha256", value="abc123"),
        "serving.max_num_seq": put("serving", "max_num_seq", value=16),
    }
    findings = structural("a2-single-distill", *mistakes.values())
    assert len(findings) == 5
    assert {format_path(f.path) for f in findings} == set(mistakes)
    assert all(f.is_error for f in findings)

    result = located("a2-single-distill", *mistakes.values())
    assert len(result.errors) == 5 and result.plan is None
    lines = [f.position.line for f in result.errors if f.position is not None]
    assert len(set(lines)) == 5 and lines == sorted(lines)


# ----------------------------------------------------------------------------------- unknown keys


UNKNOWN_KEYS: list[tuple[tuple[str | int, ...], Any, str]] = [
    (("tunning",), {"cpu_governor": "performance"}, "tuning"),
    (("serving", "max_num_seq"), 16, "max_num_seqs"),
    (("software", "driver", "sha265"), "0" * 64, "sha256"),
    (("serving", "hccl", "bufsize_mb"), 256, "buffsize_mb"),
    (("servers", 0, "adress"), "10.0.0.9", "address"),
    (("profiles", "atlas-800t-a2", "hbm"), 64, "hbm_gb"),
    (("servers", 0, "overrides", "cpu_govenor"), "performance", "cpu_governor"),
    (("rollout", "gates", "smoke_prompt"), 3, "smoke_prompts"),
    (("serving", "replicas", 1, "device"), [4, 5], "devices"),
]


@pytest.mark.parametrize(
    ("path", "value", "suggestion"), UNKNOWN_KEYS, ids=[format_path(c[0]) for c in UNKNOWN_KEYS]
)
def test_unknown_key_suggests_the_closest_key(
    path: tuple[str | int, ...], value: Any, suggestion: str
) -> None:
    f = only(structural("a2-single-distill", put(*path, value=value)))
    where = format_path(path[:-1]) if len(path) > 1 else "the top level"
    assert f.path == path
    assert f.code == "unknown-key" and f.is_error
    assert f.message.startswith(f"unknown key '{path[-1]}' ") and f.message.endswith(f" {where}")
    assert f.fix is not None and f.fix.startswith(f"did you mean '{suggestion}'? allowed keys here: ")
    assert suggestion in f.fix.split("allowed keys here: ")[1].split(", ")


def test_unknown_key_without_a_close_match_lists_the_allowed_keys() -> None:
    f = only(structural("a2-single-distill", put("serving", "zzz", value=1)))
    assert f.fix is not None and "did you mean" not in f.fix
    assert f.fix.startswith("allowed keys here: ") and "max_model_len" in f.fix


def test_unknown_key_is_located_at_the_key() -> None:
    text = dump(mutated("a2-single-distill", put("serving", "hccl", "bufsize_mb", value=256)))
    f = only(validate_text(text, "site.yaml").errors)
    assert f.position is not None
    assert text.splitlines()[f.position.line - 1][f.position.column - 1 :].startswith("bufsize_mb:")


# ---------------------------------------------------------------------------------------- literals


LITERALS: list[tuple[Mutation, str, str]] = [
    (put("os", "distro", value="ubunto"), "os.distro", "did you mean 'ubuntu'?"),
    (put("os", "distro", value="openeular"), "os.distro", "did you mean 'openeuler'?"),
    (put("model", "dtype", value="bf16"), "model.dtype", "did you mean 'bfloat16'?"),
    (
        put("tuning", "transparent_hugepages", value="madvice"),
        "tuning.transparent_hugepages",
        "did you mean 'madvise'?",
    ),
    (
        put("tuning", "cpu_governor", value="perfomance"),
        "tuning.cpu_governor",
        "did you mean 'performance'?",
    ),
    (
        put("profiles", "atlas-800t-a2", "chip", value="910b3"),
        "profiles.atlas-800t-a2.chip",
        "did you mean '910B3'?",
    ),
    (put("tuning", "irqbalance", value="off"), "tuning.irqbalance", "use one of: enabled, disabled"),
    (
        put("tuning", "hugepages", "size_kb", value=4096),
        "tuning.hugepages.size_kb",
        "use one of: 2048, 524288, 1048576",
    ),
    (
        put("profiles", "atlas-800t-a2", "chip", value=91093),
        "profiles.atlas-800t-a2.chip",
        'write it in quotes: "910_93"',
    ),
]


@pytest.mark.parametrize(("mutation", "path", "fix"), LITERALS, ids=[c[1] for c in LITERALS])
def test_literal_errors_suggest_a_value(mutation: Mutation, path: str, fix: str) -> None:
    f = only(structural("a2-single-distill", mutation))
    assert format_path(f.path) == path
    assert f.code == "value" and f.message.startswith("Input should be ")
    assert f.fix is not None and f.fix.startswith(fix)


def test_unquoted_a3_chip_explains_the_yaml_number() -> None:
    text = (ROOT / "inventories" / "a3-single-r1-w8a8" / "site.yaml").read_text(encoding="utf-8")
    assert 'chip: "910_93"' in text
    result = validate_text(text.replace('chip: "910_93"', "chip: 910_93"), "site.yaml")
    f = only(result.errors)
    assert f.message.endswith("got 91093")
    assert f.fix == 'write it in quotes: "910_93" (unquoted, YAML reads it as the number 91093)'
    assert f.position is not None and text.splitlines()[f.position.line - 1].strip().startswith("chip:")


# ---------------------------------------------------------------------------------- unions, types


@pytest.mark.parametrize("value", [[1], None, {"n": 1}, 0.5], ids=["list", "null", "mapping", "fraction"])
def test_union_branches_merge_into_one_finding(value: Any) -> None:
    f = only(structural("a2-fleet-gateway", put("rollout", "batch_size", value=value)))
    assert format_path(f.path) == "rollout.batch_size"
    assert "valid integer" in f.message and "; or " in f.message and "valid string" in f.message


@pytest.mark.parametrize("value", [2, "25%", "100%"])
def test_union_accepts_either_branch(value: Any) -> None:
    assert validate_structure(mutated("a2-fleet-gateway", put("rollout", "batch_size", value=value)))[1] == []


def test_union_inside_a_mapping_value_is_one_finding() -> None:
    f = only(structural("a2-single-distill", put("tuning", "sysctls", value={"vm.swappiness": [0]})))
    assert f.path == ("tuning", "sysctls", "vm.swappiness")
    assert format_path(f.path) == 'tuning.sysctls["vm.swappiness"]'


@pytest.mark.parametrize(
    ("mutation", "path"),
    [
        (put("servers", 0, "overrides", "hccl_if_ip", value="not-an-ip"), "servers[0].overrides.hccl_if_ip"),
        (
            put("servers", 0, "overrides", "hccn_addresses", value=["10.0.0.1", "x"]),
            "servers[0].overrides.hccn_addresses[1]",
        ),
        (put("serving", "replicas", 0, "devices", value=[0, "one"]), "serving.replicas[0].devices[1]"),
        (put("serving", "max_num_batched_tokens", value="lots"), "serving.max_num_batched_tokens"),
    ],
    ids=["hccl-if-ip", "hccn-address", "device", "batched-tokens"],
)
def test_optional_and_list_fields_give_one_finding_at_the_item(mutation: Mutation, path: str) -> None:
    f = only(structural("a2-single-distill", mutation))
    assert format_path(f.path) == path
    assert "got " in f.message


def test_type_and_range_errors_explain_the_field() -> None:
    f = only(structural("a2-single-distill", put("profiles", "atlas-800t-a2", "cards", value=9)))
    assert "less than or equal to 8" in f.message and f.message.endswith("got 9")
    assert f.fix is not None and f.fix.startswith("use a value inside the allowed range, 1 to 8")
    assert "NPU cards per server" in f.fix

    f = only(structural("a2-single-distill", put("serving", "max_model_len", value="32k")))
    assert "valid integer" in f.message and f.fix is not None and f.fix.startswith("write a number")

    f = only(structural("a2-single-distill", put("servers", 0, "roles", value="npu")))
    assert "valid list" in f.message


@pytest.mark.parametrize(
    ("mutation", "path", "message", "fix"),
    [
        (
            put("software", "driver", "sha256", value="ABC"),
            "software.driver.sha256",
            "SHA-256 digest",
            "sha256sum",
        ),
        (
            put("model", "weights_path", value="data/models"),
            "model.weights_path",
            "must be an absolute path",
            "start the path with '/'",
        ),
        (put("site", value="Lab_1"), "site", "lower-case DNS label", "rename it"),
    ],
    ids=["sha256", "absolute-path", "dns-label"],
)
def test_pattern_errors_say_what_the_pattern_means(
    mutation: Mutation, path: str, message: str, fix: str
) -> None:
    f = only(structural("a2-single-distill", mutation))
    assert format_path(f.path) == path and message in f.message
    assert f.fix is not None and fix in f.fix


def test_missing_keys_name_the_field_and_where_to_add_it() -> None:
    f = only(structural("a2-single-distill", drop("servers", 0, "address")))
    assert f.code == "missing" and format_path(f.path) == "servers[0].address"
    assert f.message.startswith("required key 'address' is missing in servers[0]")
    assert "Management address" in f.message
    assert f.fix == "add 'address:' to servers[0] (see docs/spec.md)"

    findings = structural("a2-single-distill", drop("os"), drop("model"))
    assert {format_path(f.path) for f in findings} == {"os", "model"}
    assert all("is missing" in f.message and "top level" in f.message for f in findings)


def test_model_at() -> None:
    assert model_at(()) is SiteSpec
    assert model_at(("serving", "replicas", 0)) is Replica
    assert model_at(("profiles", "any-name")) is HardwareProfile
    assert model_at(("servers", 3, "overrides")) is ServerOverrides
    assert model_at(("tuning", "sysctls")) is None
    assert model_at(("no-such-section",)) is None


# ------------------------------------------------------------------------------------------ secrets

SECRET = "sk-live-123"


@pytest.mark.parametrize(
    ("mutation", "path"),
    [
        (put("serving", "api_key", value=SECRET), "serving.api_key"),
        (put("serving", "api_key", value=[SECRET]), "serving.api_key"),
        (put("serving", "api_key", value={"value": SECRET}), "serving.api_key"),
        (put("serving", "api_key", value=123456789), "serving.api_key"),
        (
            put("image", "registry", value={"url": "r.example.com/ai", "username": "u", "password": SECRET}),
            "image.registry.password",
        ),
        (
            put(
                "drift", "outputs", value=[{"type": "webhook", "url": f"https://hooks.example.com/{SECRET}"}]
            ),
            "drift.outputs[0].url",
        ),
        (put("serving", "env", value={"HF_TOKEN": 123456789}), "serving.env.HF_TOKEN"),
    ],
    ids=["inline", "list", "mapping", "number", "registry-password", "webhook-url", "env-token-number"],
)
def test_secrets_are_never_echoed(mutation: Mutation, path: str) -> None:
    result = located("a2-single-distill", mutation)
    f = only(result.errors)
    assert format_path(f.path) == path
    text = format_finding(f, "site.yaml")
    assert SECRET not in text and "123456789" not in text


def test_inline_secret_in_env_is_an_error_without_the_value() -> None:
    result = located("a2-single-distill", put("serving", "env", value={"HF_TOKEN": SECRET}))
    f = only(result.errors)
    assert f.code == "secret" and format_path(f.path) == "serving.env.HF_TOKEN"
    assert SECRET not in format_finding(f, "site.yaml")


# -------------------------------------------------------------------------------------------- order


def test_findings_are_sorted_errors_first_then_by_line() -> None:
    result = located(
        "a2-single-distill",
        put("profiles", "spare", value={"chip": "910B3"}),  # warning: unused profile (early in the file)
        # warning: an NPU server that serves no replica
        lambda d: d["servers"].append({"name": "a2-02", "address": "10.20.0.12", "profile": "atlas-800t-a2"}),
        put("serving", "max_num_batched_tokens", value=8),  # error
        put("rollout", "canary", value=5),  # error (late in the file)
    )
    kinds = [f.severity for f in result.findings]
    assert kinds.count("error") >= 2 and kinds.count("warning") >= 2
    assert kinds == sorted(kinds, key=lambda k: k != "error")
    for severity in ("error", "warning"):
        lines = [f.position.line for f in result.findings if f.severity == severity and f.position]
        assert lines == sorted(lines)
    first_warning = min(f.position.line for f in result.warnings if f.position)
    last_error = max(f.position.line for f in result.errors if f.position)
    assert first_warning < last_error  # so the order is not just the position order


def test_an_all_digit_sha256_is_told_to_be_quoted() -> None:
    """`sha256: 1111...` unquoted is a YAML number: before, "Input should be a valid string"."""
    text = dump(example("a2-single-distill")).replace(
        "sha256: ", "sha256: 1111111111111111111111111111111111111111111111111111111111111111  # ", 1
    )
    f = only(validate_text(text, "site.yaml").errors)
    assert format_path(f.path) == "software.driver.sha256"
    assert f.position is not None and text.splitlines()[f.position.line - 1].lstrip().startswith("sha256: 1")
    assert f.message.startswith("YAML read this value as the number 1111")
    assert f.message.endswith(", but it must be text")
    assert f.fix is not None and f.fix.startswith('quote it exactly as written, e.g. sha256: "..."')
