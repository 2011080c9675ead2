"""--safetensors-load-strategy from where the weights live (planning/load.py), against vLLM's own LoadConfig
text (catalog/data/vllm_load_strategies.yaml, read from the same wheels as the flag tables): local disk
renders no flag; shared storage prefetches when the checkpoint fits in 90% of the servers' memory (eager
before vLLM v0.18), else loads lazily; an explicit value is rendered as given and refused, with its field and
fix, when the pinned release does not take it."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.catalog import flag_table, table_versions
from orchestrator.catalog._data import CatalogDataError, load
from orchestrator.catalog.load_strategies import load_strategies, parse
from orchestrator.planning.load import load_plan
from orchestrator.planning.phases import plan_phases
from orchestrator.spec.site import SiteSpec
from tests.helpers import load_example, validate_data
from tests.spec_text import described

FLAG = "--safetensors-load-strategy"
R1_GIB = 641  # DeepSeek-R1 W8A8 with its MTP layer, as the plan computes it (test_model_sizes.py)


def test_the_strategies_come_from_the_flag_tables_wheels_and_agree_with_their_parsers() -> None:
    releases = load("vllm_load_strategies.yaml")["releases"]
    assert sorted(releases) == sorted(table_versions())
    for version in table_versions():
        table = flag_table(version)
        row = releases[version]
        assert (row["wheel"]["filename"], row["wheel"]["sha256"]) == (table.wheel, table.wheel_sha256)
        # two readings of one wheel: vLLM's parser has the option exactly where LoadConfig has the field
        assert (table.get(FLAG) is not None) == (row["field"] is not None), version


@pytest.mark.parametrize(
    ("vllm", "values", "default", "auto"),
    [
        ("0.9.1", None, None, False),
        ("0.11.0", ("lazy", "eager"), "lazy", False),  # vllm PR 24469
        ("0.13.0", ("lazy", "eager", "torchao"), "lazy", False),
        ("0.18.0", ("lazy", "eager", "prefetch", "torchao"), "lazy", False),  # vllm PR 36012
        ("0.21.0", ("lazy", "eager", "prefetch", "torchao"), None, True),  # vllm PR 37673: NFS auto-prefetch
        ("0.25.1", ("lazy", "eager", "prefetch", "torchao"), None, True),
        ("0.22.0", ("lazy", "eager", "prefetch", "torchao"), None, True),  # no table: the newest before it
    ],
)
def test_each_release_takes_what_its_load_config_documents(
    vllm: str, values: tuple[str, ...] | None, default: str | None, auto: bool
) -> None:
    got = load_strategies(vllm)
    if values is None:
        assert got is None
        return
    assert got is not None and (got.values, got.default, got.auto_prefetch) == (values, default, auto)


def test_a_docstring_without_values_is_a_catalog_error() -> None:
    row = {"wheel": {"filename": "w"}, "field": {"declaration": 'x: str = "lazy"', "docstring": "Nothing."}}
    with pytest.raises(CatalogDataError, match=r"releases\.9\.9\.9: no values"):
        parse("9.9.9", row)


def site(name: str, *, memory_gb: int | None = None, **model: Any) -> dict[str, Any]:
    data = load_example(name)
    data["model"].update(model)
    if memory_gb is not None:
        for prof in data["profiles"].values():
            prof["memory_gb"] = memory_gb
    return data


def planned(data: dict[str, Any]) -> tuple[list[list[str]], str]:
    result = validate_data(data)
    assert result.plan is not None, [str(f) for f in result.errors]
    plan = result.plan
    argvs = [list(m.args) for r in plan.replicas for m in r.members if m.args]
    if plan.pd is not None:
        argvs += [list(r.args) for i in plan.pd.instances for r in i.ranks]
    spec = SiteSpec.model_validate(data)
    (serve,) = [p.summary for p in plan_phases(spec, plan) if p.name == "serve"]
    return argvs, serve


def strategy(argv: list[str]) -> str | None:
    return argv[argv.index(FLAG) + 1] if FLAG in argv else None


def test_local_disk_renders_no_flag() -> None:
    argvs, serve = planned(site("a3-pd-r1-w8a8"))
    assert argvs and all(FLAG not in a for a in argvs)
    assert "weights load: vLLM's default (weights on local disk: mmap)" in serve


def test_nfs_prefetches_a_checkpoint_that_fits_on_every_rank_of_both_pools() -> None:
    argvs, serve = planned(site("a3-pd-r1-w8a8", storage="nfs"))
    assert len(argvs) == 2 * 2 + 32 and {strategy(a) for a in argvs} == {"prefetch"}  # 2P (DP2) + 1D (DP32)
    assert f"the {R1_GIB} GiB checkpoint fits in 90% of the servers' memory (1,024 GB)" in serve


def test_a_checkpoint_over_the_memory_budget_loads_lazily() -> None:
    # 700 GB x 0.9 = 586.7 GiB < 641 GiB
    argvs, serve = planned(site("a3-pd-r1-w8a8", storage="lustre", memory_gb=700))
    assert {strategy(a) for a in argvs} == {"lazy"}
    assert "is over 90% of the servers' memory (700 GB): mmap" in serve
    argvs, _ = planned(site("a3-pd-r1-w8a8", storage="lustre", memory_gb=800))  # 670.6 GiB: fits
    assert {strategy(a) for a in argvs} == {"prefetch"}


def test_shared_storage_before_prefetch_existed_reads_eagerly_and_without_the_flag_not_at_all() -> None:
    spec = SiteSpec.model_validate(site("a2-single-distill", storage="network"))
    assert (load_plan(spec, 61.0, "0.13.0").strategy, load_plan(spec, 61.0, "0.18.0").strategy) == (
        "eager",
        "prefetch",
    )
    old = load_plan(spec, 61.0, "v0.9.1")  # as the release matrix spells it
    assert old.strategy is None and old.args() == []
    assert "v0.9.1 has no --safetensors-load-strategy" in old.why


def test_an_explicit_strategy_is_rendered_as_given() -> None:
    argvs, serve = planned(site("a2-single-distill", load_strategy="eager"))
    assert argvs and {strategy(a) for a in argvs} == {"eager"}
    assert "--safetensors-load-strategy eager (model.load_strategy)" in serve


def test_an_explicit_strategy_the_pinned_release_does_not_take_is_refused() -> None:
    data = site("a2-single-distill", load_strategy="prefetch")
    data["software"]["vllm_ascend"]["version"] = "v0.13.0"
    data["serving"]["max_num_seqs"] = 1
    found = [described(f) for f in validate_data(data).findings if f.path[:2] == ("model", "load_strategy")]
    assert found == [
        (
            "model.load_strategy",
            "vLLM v0.13.0 (pinned by vllm-ascend v0.13.0) has no --safetensors-load-strategy prefetch: it "
            "takes lazy, eager, torchao",
            "set model.load_strategy to one of auto, lazy, eager, torchao",
            "model",
            [],
        )
    ]


def test_extra_args_may_not_set_it_next_to_the_plan() -> None:
    data = site("a2-single-distill")
    data["serving"]["extra_args"] = ["--safetensors-load-strategy", "eager"]
    messages = [f.message for f in validate_data(data).errors if f.path[:2] == ("serving", "extra_args")]
    assert any("model.load_strategy" in m for m in messages), messages


def test_an_explicit_strategy_on_a_vllm_without_the_flag_is_refused() -> None:
    data = site("a2-single-distill", load_strategy="eager")
    data["software"]["vllm_ascend"]["version"] = "v0.9.1"
    data["serving"]["max_num_seqs"] = 1
    found = [described(f) for f in validate_data(data).findings if f.path[:2] == ("model", "load_strategy")]
    assert found == [
        (
            "model.load_strategy",
            "vLLM v0.9.1 (pinned by vllm-ascend v0.9.1) has no --safetensors-load-strategy",
            "set model.load_strategy: auto, or pin a vllm-ascend release on vLLM v0.11 or newer",
            "model",
            [],
        )
    ]
