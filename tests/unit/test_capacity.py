"""Capacity planning: memory per NPU for weights, runtime and KV cache, and 'what would fit'.

The budget is checked against what torch_npu / vLLM report on real devices
(tests/fixtures/ascend/device_memory.txt), not against the nominal HBM size.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from orchestrator.catalog import chips_of_family, get_model
from orchestrator.planning import capacity as cap
from tests.helpers import validate_data

MEMORY = Path(__file__).resolve().parents[1] / "fixtures" / "ascend" / "device_memory.txt"


def reported() -> dict[tuple[str, int], float]:
    """(chip family, nominal GB) -> the smallest total (GiB) a device of that kind reported."""
    out: dict[tuple[str, int], float] = {}
    for line in MEMORY.read_text(encoding="utf-8").splitlines():
        if line.startswith(("#", "budget")):
            continue
        key, _, quote = line.split(" | ", 2)
        family, gb = key.split()
        torch = re.search(r"; ([0-9.]+) GiB total capacity", quote)
        smi = re.search(r" [0-9]+ / ([0-9]+) +\|$", quote)
        gib = float(torch[1]) if torch else int(smi[1]) / 1024 if smi else math.nan
        out[(family, int(gb))] = min(gib, out.get((family, int(gb)), math.inf))
    return out


@pytest.mark.parametrize(("family", "gb"), sorted(reported()))
def test_usable_memory_is_what_the_device_reports(family: str, gb: int) -> None:
    want = reported()[(family, gb)]
    chips = [c for c in chips_of_family(family) if gb in c.hbm_gb_allowed]
    assert chips and all(c.usable_gib(gb) == pytest.approx(want, abs=0.005) for c in chips)


def test_budget_is_gpu_memory_utilization_of_the_usable_memory() -> None:
    # vLLM-Ascend log, 64 GB 910B: "Free memory on device (60.61/60.96 GiB) ... is (0.6, 36.57 GiB)"
    line = next(ln for ln in MEMORY.read_text(encoding="utf-8").splitlines() if ln.startswith("budget"))
    m = re.search(
        r"\((?P<free>[0-9.]+)/(?P<total>[0-9.]+) GiB\).*\((?P<util>[0-9.]+), (?P<gib>[0-9.]+) GiB\)", line
    )
    assert m is not None
    arch = get_model("DeepSeek-R1-Distill-Qwen-7B")
    c = cap.plan_capacity(
        arch, "none", 2, cap.Layout(1, 1, 1, False), float(m["total"]), float(m["util"]), 4096, 1, 200
    )
    assert c.budget_gib == pytest.approx(float(m["gib"]), abs=0.01)


def test_deepseek_weight_sizes_match_published_checkpoints() -> None:
    r1 = get_model("DeepSeek-R1")
    w8a8 = get_model("DeepSeek-R1-W8A8")
    # ~1.3 TB in BF16, ~0.67 TB in W8A8 (ascend-samples / fleet-anchors figures)
    assert 1.25e12 < cap.weight_bytes_total(r1, "none") < 1.40e12
    assert 0.62e12 < cap.weight_bytes_total(w8a8, "w8a8") < 0.70e12
    # W4A8 halves the routed experts only
    assert cap.weight_bytes_total(w8a8, "w4a8") < 0.4e12


def test_expert_parallel_splits_experts_over_tp_times_dp() -> None:
    arch = get_model("DeepSeek-R1-W8A8")
    with_ep = cap.weight_gib_per_device(arch, "w8a8", cap.Layout(tp=4, pp=1, dp=4, ep=True))
    without = cap.weight_gib_per_device(arch, "w8a8", cap.Layout(tp=4, pp=1, dp=4, ep=False))
    assert with_ep == pytest.approx(without / 4, rel=0.1)
    assert 40 < with_ep < 45  # 654 B experts / 16 + 17 B dense / 4, in GiB


def test_mla_kv_cache_is_not_split_by_tp_but_gqa_is() -> None:
    mla = get_model("DeepSeek-R1")
    gqa = get_model("DeepSeek-R1-Distill-Qwen-32B")
    assert cap.kv_bytes_per_token_per_device(mla, 2, cap.Layout(1, 1, 1, False)) == 61 * 576 * 2
    assert cap.kv_bytes_per_token_per_device(mla, 2, cap.Layout(8, 1, 1, False)) == 61 * 576 * 2
    one = cap.kv_bytes_per_token_per_device(gqa, 2, cap.Layout(1, 1, 1, False))
    assert one == 2 * 64 * 8 * 128 * 2
    assert cap.kv_bytes_per_token_per_device(gqa, 2, cap.Layout(4, 1, 1, False)) == one / 4
    # tp beyond the KV heads replicates one head per device
    assert cap.kv_bytes_per_token_per_device(gqa, 2, cap.Layout(16, 1, 1, False)) == one / 8


def test_servers_needed_for_r1_w8a8_on_a2_is_two_and_bf16_is_four() -> None:
    # vllm-ascend's DeepSeek tutorials (docs/source/tutorials): R1-W8A8 on 1x A3 (16 dies) or 2x A2 (8 x 64G)
    w8a8 = get_model("DeepSeek-R1-W8A8")
    r1 = get_model("DeepSeek-R1")
    a2, a3 = reported()[("910b", 64)], reported()[("910_93", 64)]
    assert cap.servers_needed(w8a8, "w8a8", 2, 8, a2, 0.92, 16384, 200, mtp=False) == 2
    assert cap.servers_needed(r1, "none", 2, 8, a2, 0.92, 16384, 200, mtp=False) == 4
    assert cap.servers_needed(w8a8, "w8a8", 2, 16, a3, 0.92, 16384, 200, mtp=True) == 1
    assert cap.servers_needed(r1, "none", 2, 16, a3, 0.92, 16384, 200, mtp=False) == 2


def test_r1_w8a8_on_one_a2_is_rejected_with_what_would_fit(pair: dict) -> None:
    pair["servers"] = pair["servers"][:1] + pair["servers"][2:]
    pair["serving"]["replicas"][0]["servers"] = ["a2-01"]
    pair["serving"]["parallelism"] = {"tp": 4, "dp": 2, "ep": True}
    result = validate_data(pair)
    msgs = [f for f in result.errors if f.code == "capacity"]
    assert len(msgs) == 1
    text = msgs[0].message
    assert "DeepSeek-R1-W8A8 W8A8" in text
    assert "needs at least 2 Atlas 800T A2 servers (16 x 64 GB)" in text
    assert "this replica has 8 x 64 GB" in text
    assert msgs[0].path == ("serving", "replicas", 0, "servers")


def test_capacity_error_suggests_expert_parallelism_when_off(pair: dict) -> None:
    pair["serving"]["parallelism"]["ep"] = False
    result = validate_data(pair)
    (finding,) = [f for f in result.errors if f.code == "capacity"]
    assert "ep: true" in (finding.fix or "")


def test_max_model_len_too_long_for_kv_cache_suggests_a_length(pair: dict) -> None:
    pair["serving"]["max_model_len"] = 163840
    pair["serving"]["max_num_seqs"] = 1
    pair["serving"]["gpu_memory_utilization"] = 0.8  # at 0.75 the weights with MTP's draft layer do not fit
    result = validate_data(pair)
    (finding,) = [f for f in result.errors if f.code == "capacity"]
    assert finding.path == ("serving", "max_model_len")
    assert "lower max_model_len to" in (finding.fix or "")
    suggested = int((finding.fix or "").split("lower max_model_len to ")[1].split()[0])
    pair["serving"]["max_model_len"] = suggested
    assert validate_data(pair).ok


def test_full_concurrency_shortfall_is_a_warning_with_the_number_that_fits(single: dict) -> None:
    single["serving"]["max_num_seqs"] = 64
    result = validate_data(single)
    assert result.ok
    # R1-Distill-Qwen-32B (32.8B, 64 layers, 8 KV heads x 128) BF16 at TP4 on 64 GB 910B3, max_model_len 32768
    s = single["serving"]
    budget = reported()[("910b", 64)] * s.get("gpu_memory_utilization", 0.9)  # the spec default
    weights = 32.8e9 * 2 / 4 / 2**30
    runtime = 1.5 + 2 * 200 / 1024
    kv = 2 * 64 * (8 // 4) * 128 * 2 * s["max_model_len"] / 2**30
    fits = math.floor((budget - weights - runtime) / kv)
    (warn,) = [f for f in result.warnings if f.code == "capacity"]
    assert warn.message.startswith(f"replicas 'r0', 'r1': the KV cache holds {fits} sequences")
    assert f"lower max_num_seqs to {fits}" in (warn.fix or "")


def test_plan_reports_headroom_and_budget(pair: dict) -> None:
    result = validate_data(pair)
    assert result.plan is not None
    c = result.plan.replicas[0].capacity
    assert c.budget_gib == pytest.approx(reported()[("910b", 64)] * 0.92)
    assert c.usable_gib < 64
    assert c.fits and c.full_concurrency_fits
    assert c.headroom_gib == pytest.approx(c.kv_budget_gib - 8 * c.kv_gib_per_seq)
    assert c.overhead_gib == pytest.approx(1.5 + 2 * 200 / 1024)  # HCCL_BUFFSIZE 200, as the tutorial


def test_kv_int8_halves_kv_cache_and_renders_no_flag(pair: dict) -> None:
    base = validate_data(pair).plan
    pair["serving"]["kv_cache_dtype"] = "int8"
    result = validate_data(pair)
    half = result.plan
    assert base is not None and half is not None
    assert half.replicas[0].capacity.kv_gib_per_seq == pytest.approx(
        base.replicas[0].capacity.kv_gib_per_seq / 2
    )
    # vLLM's --kv-cache-dtype has no int8; vllm-ascend's C8 KV cache comes from the checkpoint
    assert all("--kv-cache-dtype" not in m.args for m in half.replicas[0].members)
    (warn,) = [f for f in result.warnings if f.code == "kv-cache"]
    assert "kv_cache_type C8" in warn.message


def test_kv_int8_on_an_unquantized_model_is_refused(single: dict) -> None:
    single["serving"]["kv_cache_dtype"] = "int8"
    (err,) = [f for f in validate_data(single).errors if f.code == "kv-cache"]
    assert err.path == ("serving", "kv_cache_dtype") and "kv_cache_dtype: auto" in (err.fix or "")


def test_a_layout_that_wastes_the_servers_says_so(pair: dict) -> None:
    # R1 fits on the two A2 servers with expert parallelism; without it every DP rank holds all experts
    pair["serving"]["parallelism"]["ep"] = False
    (err,) = [f for f in validate_data(pair).errors if f.code == "capacity"]
    assert err.path == ("serving", "parallelism")
    assert "fits on 2 Atlas 800T A2 server(s), but with tp=4 pp=1 dp=4 ep=False" in err.message
    assert err.fix == "enable expert parallelism (ep: true) so experts are split across all devices"
