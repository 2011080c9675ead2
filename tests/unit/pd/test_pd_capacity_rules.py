"""PD capacity per role (weights, one max_model_len sequence, full concurrency with each pool's settings) and
the plan check that every PD instance has its own Mooncake engine id (a PdPlan built by hand: the PD plan is
not filled by build_plan yet)."""

from __future__ import annotations

from orchestrator.planning.model import Capacity
from orchestrator.planning.pd_model import PdInstancePlan, PdPlan, PdRole
from orchestrator.spec.findings import format_path
from orchestrator.validation.plan_checks.pd_engine_ids import engine_id_clashes
from tests.unit.pd.pd_site import BASE, clean, edit, expect, validate

P = "serving.disaggregation.prefill"
D = "serving.disaggregation.decode"
DECODE_SEQS = "      max_num_seqs: 8\n      additional"


def test_prefill_weights_do_not_fit_without_tp() -> None:
    text = edit(BASE, ("{tp: 8, dp: 2, ep: true}", "{tp: 1, dp: 16, ep: true}"))
    f = expect(text, "capacity", f"{P}.parallelism", "{tp: 1, dp: 16, ep: true}")
    assert f.message.startswith("prefill: DeepSeek-R1-W8A8 with tp=1 pp=1 dp=16 ep=True puts 60.1 GiB")
    clean(BASE, "capacity")


def test_weights_do_not_fit_without_expert_parallelism() -> None:
    text = edit(BASE, ("{tp: 8, dp: 2, ep: true}", "{tp: 8, dp: 2}"))
    f = expect(text, "capacity", f"{P}.parallelism", "{tp: 8, dp: 2}")
    assert f.fix and f"{P}.parallelism.ep: true" in f.fix


def test_decode_budget_follows_its_own_gpu_memory_utilization() -> None:
    text = edit(
        BASE, (DECODE_SEQS, "      max_num_seqs: 8\n      gpu_memory_utilization: 0.5\n      additional")
    )
    f = expect(text, "capacity", f"{D}.parallelism", "{tp: 1, dp: 32, ep: true}")
    assert "gpu_memory_utilization 0.5" in f.message and f.message.startswith("decode:")


def test_one_sequence_must_fit_the_decode_kv_cache() -> None:
    text = edit(
        BASE,
        ("  max_model_len: 16384", "  max_model_len: 163840"),
        (DECODE_SEQS, "      max_num_seqs: 1\n      gpu_memory_utilization: 0.8\n      additional"),
    )
    f = expect(text, "capacity", "serving.max_model_len", "max_model_len: 163840")
    assert f.message.startswith("decode: one sequence of max_model_len 163840")
    assert f.fix and "lower max_model_len to 70656" in f.fix


def test_full_concurrency_warns_per_pool() -> None:
    text = edit(BASE, (DECODE_SEQS, "      max_num_seqs: 64\n      additional"))
    f = expect(text, "capacity", f"{D}.max_num_seqs", "max_num_seqs: 64")
    assert not f.is_error and "holds 9 sequences" in f.message
    assert validate(text).plan is not None


def test_decode_hccl_buffer_for_moe_dispatch() -> None:
    text = edit(
        BASE,
        ("      hccl_buffsize_mb: 1024\n", "      hccl_buffsize_mb: 64\n"),
        (DECODE_SEQS, "      max_num_seqs: 32\n      additional"),
    )
    f = expect(text, "hccl", f"{D}.hccl_buffsize_mb", "hccl_buffsize_mb: 64")
    assert not f.is_error and "over 32 ranks and max_num_seqs 32" in f.message
    clean(BASE, "hccl")


def _instance(name: str, role: PdRole, engine_id: str) -> PdInstancePlan:
    cap = Capacity(61.0, 55.0, 40.0, 2.0, 1.0, 8, 9)
    return PdInstancePlan(
        name=name,
        role=role,
        engine_id=engine_id,
        kv_port=36000,
        tp=8,
        dp=2,
        ep=True,
        dp_address="10.30.0.11",
        dp_rpc_port=12321,
        servers=("a3-01",),
        ranks=(),
        capacity=cap,
        startup_timeout_s=1800,
    )


def test_engine_ids_are_unique_per_instance() -> None:
    spec = validate(BASE).spec
    assert spec is not None
    pd = PdPlan(
        "MooncakeConnectorV1",
        (_instance("p0", "prefill", "p0"), _instance("p1", "prefill", "p0")),
        (_instance("d0", "decode", "d0"),),
    )
    (f,) = engine_id_clashes(spec, pd)
    assert f.code == "pd-engine-id" and f.is_error
    assert format_path(f.path) == f"{P}.instances[1].name"
    assert "'p1' was planned with Mooncake engine id 'p0', which instance 'p0' has too" in f.message
    assert format_path(f.related[0].path) == f"{P}.instances[0].name"
    fixed = PdPlan(pd.connector, (pd.prefill[0], _instance("p1", "prefill", "p1")), pd.decode)
    assert engine_id_clashes(spec, fixed) == []
