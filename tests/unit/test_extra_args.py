"""serving.extra_args: every spelling vLLM accepts resolves to one option of the pinned release, flags the
plan derives are refused naming the spec field, values are checked against the release's types and choices.

Expectations are written from vLLM's behaviour (what its parser accepts at the pinned tag), not read from
the code under test.
"""

from __future__ import annotations

from typing import Any, get_args

import pytest

from orchestrator.catalog import flag_table, table_versions
from orchestrator.planning.serve_args import PLAN_FIELDS, api_args, dp_args, engine_args
from orchestrator.spec.findings import Finding
from orchestrator.spec.serving import Serving
from tests.helpers import validate_data


def rendered_options() -> frozenset[str]:
    """Every option string the plan can put on a `vllm serve` line: the argument builders with every switch
    on, so the set follows the code instead of a list kept beside it."""
    kv_values = [v for v in get_args(Serving.model_fields["kv_cache_dtype"].annotation) if v != "auto"]
    serving = Serving.model_construct(
        max_num_batched_tokens=8192,
        enforce_eager=True,
        **({"kv_cache_dtype": kv_values[0]} if kv_values else {}),
    )
    args = engine_args(
        weights_path="/models/m",
        serving=serving,
        tp=2,
        pp=2,
        dp=2,
        ep=True,
        quantization="w8a8",
        dtype="bfloat16",
        trust_remote_code=True,
        backend="ray",
    )
    args += api_args("127.0.0.1", 8000, "m")
    args += dp_args(local=1, start_rank=1, head_address="127.0.0.1", rpc_port=13389, headless=False)
    args += dp_args(local=1, start_rank=1, head_address="127.0.0.1", rpc_port=13389, headless=True)
    return frozenset(a for a in args if a.startswith("-"))


def _findings(data: dict[str, Any], args: list[str], release: str | None = None) -> list[Finding]:
    data["serving"]["extra_args"] = args
    if release is not None:
        data["software"]["vllm_ascend"]["version"] = release
    result = validate_data(data)
    return [f for f in result.findings if f.path[:2] == ("serving", "extra_args")]


def _one_error(data: dict[str, Any], args: list[str], release: str | None = None) -> Finding:
    errors = [f for f in _findings(data, args, release) if f.severity == "error"]
    assert len(errors) == 1, [f.message for f in errors]
    return errors[0]


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--no-enable-expert-parallel"], "serving.parallelism.ep"),
        (["-ep"], "serving.parallelism.ep"),
        (["--no-trust-remote-code"], "model.trust_remote_code"),
        (["--no-enforce-eager"], "serving.enforce_eager"),
        (["--data-parallel-rank", "1"], "serving.replicas[].servers"),
        (["-dpn", "1"], "serving.replicas[].servers"),
        (["--nnodes", "2"], "serving.replicas[].servers"),
        (["--node-rank", "1"], "serving.replicas[].servers"),
        (["--max_model_len", "4096"], "serving.max_model_len"),
        (["--max-model-len=4k"], "serving.max_model_len"),
        (["--max-model", "4096"], "serving.max_model_len"),  # an abbreviation argparse accepts
        (["-tp", "8"], "serving.parallelism.tp"),
        (["-tp=8"], "serving.parallelism.tp"),
        (["--tensor_parallel_size=8"], "serving.parallelism.tp"),
        (["--served_model_name", "x"], "model.served_name"),
        (["--model", "/other"], "model.weights_path"),
        (["--api-key", "k"], "serving.api_key"),
        (["--port", "9000"], "serving.port"),
        (["--device-ids", "0,1"], "serving.replicas[].devices"),
    ],
)
def test_flags_the_plan_decides_are_refused_in_every_spelling(
    single: dict[str, Any], args: list[str], field: str
) -> None:
    release = "v0.25.1rc1" if args[0] == "--device-ids" else None  # --device-ids is new in vLLM v0.24
    finding = _one_error(single, args, release)
    assert f"is set by {field}" in finding.message, finding.message
    assert finding.fix is not None and f"set {field.split(' ', maxsplit=1)[0]}" in finding.fix
    assert finding.path == ("serving", "extra_args", 0)


def test_negative_forms_say_what_they_turn_off(single: dict[str, Any]) -> None:
    finding = _one_error(single, ["--seed", "1", "--no-enable-expert-parallel"])
    assert finding.path == ("serving", "extra_args", 2)
    assert finding.message.startswith("--no-enable-expert-parallel turns off --enable-expert-parallel")


def test_values_are_checked_against_the_release_choices(single: dict[str, Any]) -> None:
    dtype = _one_error(single, ["--dtype", "float64"])
    # vllm/config/model.py @ v0.23.0: ModelDType
    assert "'float64' is not one of auto, bfloat16, float, float16, float32, half" in dtype.message
    assert "model.dtype" in dtype.message
    quant = _one_error(single, ["--quantization", "bogus"])
    assert "'bogus' is not one of ascend, " in quant.message and "model.quantization" in quant.message
    block = _one_error(single, ["--block-size", "abc"])
    assert block.message.startswith("--block-size abc: 'abc' is not an integer (vLLM v0.23.0: its parser")
    tool = _one_error(single, ["--tool-call-parser", "hermes", "--logprobs-mode", "sometimes"])
    assert tool.path == ("serving", "extra_args", 2)
    assert "'sometimes' is not one of processed_logits, processed_logprobs, raw_logits, raw_logprobs" in (
        tool.message
    )
    json_arg = _one_error(single, ["--speculative-config", "{num_speculative_tokens: 1}"])
    assert "is not JSON" in json_arg.message
    missing = _one_error(single, ["--seed"])
    assert "expected one argument" in missing.message


def test_accepted_spellings_pass(single: dict[str, Any]) -> None:
    ok = [
        "--seed",
        "-1",
        "--enable-prefix-caching",
        "-O3",
        "--compilation-config.cudagraph_mode",
        "FULL_DECODE_ONLY",
        "--additional-config",
        '{"ascend_scheduler_config": {"enabled": true}}',
        "--max_num_partial_prefills=2",
        "--no-enable-log-requests",
    ]
    assert _findings(single, ok) == []


def test_config_files_are_refused(single: dict[str, Any]) -> None:
    finding = _one_error(single, ["--config", "serve.yaml"])
    assert "YAML file that validation cannot see" in finding.message
    assert finding.fix is not None and "serving.extra_args" in finding.fix


def test_removed_unknown_ambiguous_and_stray(single: dict[str, Any]) -> None:
    swap = _one_error(single, ["--swap-space", "4"])  # the value is not reported again
    assert "the pinned releases up to v0.13.0 have it, v0.18.0 and later do not" in swap.message
    assert swap.fix is not None and swap.fix.startswith("remove --swap-space")
    front = _one_error(single, ["--disable-frontend-multiprocessing"])
    assert "up to v0.18.0 have it, v0.21.0 and later do not" in front.message
    unknown = _one_error(single, ["--enable-prefix-cachx"])
    assert unknown.fix is not None and "did you mean --enable-prefix-caching?" in unknown.fix
    ambiguous = _one_error(single, ["--max-num", "4"])
    assert "ambiguous option: --max-num could match" in ambiguous.message
    stray = _one_error(single, ["--enable-prefix-caching", "yes"])
    assert stray.path == ("serving", "extra_args", 1) and "unrecognized arguments" in stray.message


def test_the_pinned_release_decides(single: dict[str, Any], pair: dict[str, Any]) -> None:
    # vLLM v0.13.0 (vllm-ascend v0.13.0) still has --swap-space: a warning, not an error
    warned = _findings(single, ["--swap-space", "4"], "v0.13.0")
    assert [f.severity for f in warned] == ["warning"]
    assert "still accepted by vLLM v0.13.0" in warned[0].message
    # --disable-log-requests: in the v0.13.0 wheel, gone from v0.18.0 (request logging became opt-in)
    [deprecated] = _findings(single, ["--disable-log-requests"], "v0.13.0")
    assert (deprecated.severity, deprecated.message) == (
        "warning",
        # AsyncEngineArgs.add_cli_args @ v0.13.0: add_argument("--disable-log-requests", deprecated=True)
        "--disable-log-requests is deprecated in vLLM v0.13.0",
    )
    gone = _one_error(pair, ["--disable-log-requests"])
    assert "up to v0.13.0 have it, v0.18.0 and later do not (this site pins v0.23.0)" in gone.message


def test_abbreviations_and_repeats_warn(single: dict[str, Any]) -> None:
    [abbrev] = _findings(single, ["--enable-prefix-cach"])
    assert abbrev.severity == "warning" and abbrev.fix == "write --enable-prefix-caching"
    [again] = _findings(single, ["--seed=3", "--seed", "4"])
    assert again.severity == "warning" and again.path == ("serving", "extra_args", 1)


def test_every_rendered_option_maps_to_a_spec_field_in_every_pinned_release() -> None:
    """The refused set is derived from what the plan renders, so a new rendered flag cannot be forgotten;
    each must exist in every pinned release and name the field that sets it."""
    for version in table_versions():
        table = flag_table(version)
        for option in sorted(rendered_options()):
            spec = table.get(option)
            assert spec is not None, f"the plan renders {option}, which vLLM v{version} does not have"
            assert spec.dest in PLAN_FIELDS, f"{option} ({spec.dest}) has no spec field in PLAN_FIELDS"


def test_what_the_planner_renders_is_covered_by_the_refused_set(
    pair: dict[str, Any],
    single: dict[str, Any],
    a3: dict[str, Any],
    duo: dict[str, Any],
    fleet: dict[str, Any],
) -> None:
    """The examples planned without extra_args: every option on every member's line (head, headless) is
    one the validator refuses in extra_args, so no rendered flag can be overridden from the spec."""
    table = flag_table("0.23.0")
    for data in (pair, single, a3, duo, fleet):
        data["serving"]["extra_args"] = []
        plan = validate_data(data).plan
        assert plan is not None
        for replica in plan.replicas:
            for member in replica.members:
                for arg in member.args:
                    spec = table.get(arg) if arg.startswith("-") else None
                    assert spec is None or spec.dest in PLAN_FIELDS, (replica.name, arg)
                    assert not arg.startswith("-") or spec is not None, f"{arg} is not a v0.23.0 option"
