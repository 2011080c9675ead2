"""The generated `vllm serve` flag tables, checked against upstream facts written down by hand.

The tables come from scripts/gen-vllm-flags (vLLM's own parser, built from each released wheel). These tests
do not compare them with anything the project derives from them: the expectations below were read from the
vLLM sources at the release tag (file and symbol named next to each) or from the vllm-ascend compatibility
matrix, and the argument reader is compared with the outcomes the real parser recorded ("probes").
"""

from __future__ import annotations

import re

import pytest

from orchestrator import catalog
from orchestrator.catalog import FlagSpec, FlagTable, flag_table, table_versions
from orchestrator.catalog.flags import flag_history, removed_flag, removed_notes
from orchestrator.catalog.vllm_argv import read_args

#: vLLM versions pinned by vllm-ascend releases (the `vllm` column of the policy matrix, written out here,
#: not read from vllm_ascend.yaml): every one must have a table.
PINNED = ("0.9.1", "0.11.0", "0.13.0", "0.18.0", "0.21.0", "0.22.1", "0.23.0", "0.24.0", "0.25.1")


def option(table: FlagTable, flag: str) -> FlagSpec:
    spec = table.get(flag)
    assert spec is not None, f"{table.label} has no {flag}"
    return spec


def test_every_pinned_vllm_has_a_table_from_its_wheel() -> None:
    assert set(PINNED) <= set(table_versions())
    assert {r.vllm.removeprefix("v") for r in catalog.RELEASES} <= set(table_versions())
    for version in PINNED:
        table = flag_table(version)
        assert table.vllm_version == version
        assert re.fullmatch(
            rf"vllm-{re.escape(version)}(-\d+)?-cp38-abi3-manylinux[\w.]*_x86_64\.whl", table.wheel
        )
        assert re.fullmatch(r"[0-9a-f]{64}", table.wheel_sha256)
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", table.generated)


def test_v0_23_0_options_match_the_vllm_sources() -> None:
    table = flag_table("v0.23.0")
    # vllm/config/cache.py @ v0.23.0: CacheDType = Literal[...]
    assert set(option(table, "--kv-cache-dtype").choices or ()) == {
        "auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla",
        "turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc",
        "int8_per_token_head", "fp8_per_token_head", "nvfp4",
    }  # fmt: skip
    # vllm/config/model.py @ v0.23.0:
    # ModelDType = Literal["auto", "half", "float16", "bfloat16", "float", "float32"]
    dtype = option(table, "--dtype")
    assert set(dtype.choices or ()) == {"auto", "half", "float16", "bfloat16", "float", "float32"}
    # vllm/engine/arg_utils.py @ v0.23.0: add_argument("--enable-expert-parallel", "-ep", ...) for a bool
    # field, so argparse.BooleanOptionalAction (which also registers --no-enable-expert-parallel)
    ep = option(table, "-ep")
    assert ep.action == "boolean_optional"
    assert set(ep.flags) == {"--enable-expert-parallel", "--no-enable-expert-parallel", "-ep"}
    # arg_utils.py _compute_kwargs: max_model_len -> human_readable_int_or_auto,
    # max_num_batched_tokens -> human_readable_int
    assert option(table, "--max-model-len").kind == "human_readable_int_or_auto"
    assert option(table, "--max-num-batched-tokens").kind == "human_readable_int"
    # quantization: "QuantizationMethods | str | None": a Literal with str gives a metavar, not choices, so
    # the parser takes any string and ModelConfig._verify_quantization refuses unknown methods later
    quant = table.get("-q")
    assert quant is not None and quant.name == "--quantization" and quant.choices is None
    assert {"ascend", "fp8", "compressed-tensors"} <= set(table.quantization_methods)
    # the served model name takes one or more values (str | list[str] -> nargs "+")
    assert option(table, "--served-model-name").nargs == "+"


def test_dash_O_is_the_optimization_level_from_v0_13_and_compilation_config_before() -> None:
    # vllm/engine/arg_utils.py @ v0.9.1: vllm_group.add_argument("--compilation-config", "-O", ...)
    assert option(flag_table("0.9.1"), "-O").name == "--compilation-config"
    # vllm/utils/argparse_utils.py @ v0.13.0 and v0.23.0: "-O3" / "-O=3" / "-O 3" -> --optimization-level
    for version in ("0.13.0", "0.23.0"):
        table = flag_table(version)
        assert table.get("-O") is None
        assert table.short_o is not None and table.short_o.name == "--optimization-level"
    short_o = flag_table("0.11.0").short_o
    assert short_o is not None and short_o.name == "--compilation-config"


def test_options_registered_by_the_serve_subcommand_are_in_the_table() -> None:
    # vllm/entrypoints/cli/serve.py @ v0.9.1 ServeSubcommand.subparser_init: --data-parallel-start-rank/-dpr,
    # --api-server-count/-asc, --headless (later moved to make_arg_parser)
    old = flag_table("0.9.1")
    assert option(old, "-dpr").name == "--data-parallel-start-rank"
    assert option(old, "-asc").name == "--api-server-count"
    assert old.get("--headless") is not None
    # vllm_ascend/platform.py (every tag): NPUPlatform.pre_register_and_update appends "ascend" to the
    # --quantization choices when the option has choices (v0.9.1 does)
    assert "ascend" in (option(old, "--quantization").choices or ())


def test_removed_flags_follow_from_the_tables() -> None:
    # vllm-project/vllm#36216 (merged 2026-03-06) removed --swap-space: in the v0.13.0 wheel, not in v0.18.0
    assert dict(flag_history("--swap-space")) == {v: v in ("0.9.1", "0.11.0", "0.13.0") for v in PINNED}
    gone = removed_flag("--swap-space", "v0.23.0")
    assert gone is not None and (gone.last_with, gone.first_without) == ("0.13.0", "0.18.0")
    assert "V0 engine" in gone.message and "--kv-transfer-config" in gone.fix
    assert removed_flag("--swap-space", "v0.13.0") is None  # still accepted there
    # FrontendArgs.disable_frontend_multiprocessing exists in vllm/entrypoints/openai/cli_args.py @ v0.18.0,
    # not @ v0.21.0
    front = removed_flag("--disable-frontend-multiprocessing", "0.23.0")
    assert front is not None and (front.last_with, front.first_without) == ("0.18.0", "0.21.0")
    newer = removed_flag("--device-ids", "0.23.0")  # new in v0.24.0 (EngineArgs.device_ids)
    assert newer is not None and newer.added_in == "0.24.0"
    assert removed_flag("--frobnicate", "0.23.0") is None


def test_every_hand_written_removal_note_names_a_flag_the_tables_saw_removed() -> None:
    for flag, note in removed_notes().items():
        history = dict(flag_history(flag))
        assert any(history.values()) and not history[PINNED[-1]], flag
        assert note.source.strip()


@pytest.mark.parametrize("version", PINNED)
def test_the_argument_reader_agrees_with_the_real_parser(version: str) -> None:
    """Every command line that gen-vllm-flags ran through vLLM's parser: refused by the reader exactly when
    the real parser refused it, and resolved to the destinations the real parser set."""
    table = flag_table(version)
    assert len(table.probes) >= 30
    for probe in table.probes:
        uses = read_args(list(probe.argv), table)
        refused = [u for u in uses if u.problem]
        assert (not refused) == probe.ok, (probe.argv, probe.error, [u.problem for u in refused])
        if probe.ok:
            assert set(probe.sets) <= {u.option.dest for u in uses if u.option}, probe.argv
