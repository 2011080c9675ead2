"""Capacity arithmetic on numbers worked out by hand (each expected value is derived in its comment):
KV cache per device under pipeline parallelism, HCCL buffers, the fewest servers a model needs, the longest
max_model_len that fits and the startup gate. The models are catalog rows or a synthetic dense model with
round numbers, so the arithmetic stays checkable on paper."""

from __future__ import annotations

from dataclasses import replace

import pytest

from orchestrator.catalog import ModelArch, get_model
from orchestrator.planning import capacity as cap
from orchestrator.planning.gates import startup_timeout_s
from orchestrator.planning.model import Capacity

GIB = 1024**3


def toy(params_b: float) -> ModelArch:
    """A dense GQA model: 8 layers, 8 KV heads of 128, no embedding weights (vocab 0), no MTP."""
    return replace(
        get_model("DeepSeek-R1-Distill-Qwen-7B"),
        name="toy",
        params_b=params_b,
        expert_params_b=0.0,
        layers=8,
        heads=8,
        kv_heads=8,
        head_dim=128,
        vocab_size=0,
        moe=False,
        attention="gqa",
        mtp_layers=0,
    )


def test_mla_kv_cache_per_device_is_divided_by_pipeline_stages() -> None:
    r1 = get_model("DeepSeek-R1")  # 61 layers, latent 512 + rope 64 = 576 values per token and layer
    # pp=1: 61 x 576 x 2 bytes = 70272; pp=2: ceil(61/2)=31 layers -> 35712; pp=4: 16 layers -> 18432
    assert cap.kv_bytes_per_token_per_device(r1, 2, cap.Layout(tp=8, pp=1, dp=1, ep=False)) == 70272
    assert cap.kv_bytes_per_token_per_device(r1, 2, cap.Layout(tp=8, pp=2, dp=1, ep=False)) == 35712
    assert cap.kv_bytes_per_token_per_device(r1, 2, cap.Layout(tp=4, pp=4, dp=1, ep=False)) == 18432
    # the MTP draft layer (1) caches on the last stage: (31 + 1) x 576 x 2 = 36864
    assert cap.kv_bytes_per_token_per_device(r1, 2, cap.Layout(8, 2, 1, False, mtp=True)) == 36864


def test_gqa_kv_cache_per_device_is_divided_by_tp_and_pipeline_stages() -> None:
    qwen = get_model("DeepSeek-R1-Distill-Qwen-32B")  # 64 layers, 8 KV heads of 128
    # tp=4, pp=2: K and V x 32 layers x 2 heads x 128 x 2 bytes = 32768
    assert cap.kv_bytes_per_token_per_device(qwen, 2, cap.Layout(tp=4, pp=2, dp=1, ep=False)) == 32768
    # tp=16 > 8 KV heads: at least one head per device; pp=1: 2 x 64 x 1 x 128 x 2 = 32768
    assert cap.kv_bytes_per_token_per_device(qwen, 2, cap.Layout(tp=16, pp=1, dp=1, ep=False)) == 32768


def test_hccl_buffers_are_counted_from_two_ranks_on() -> None:
    # one rank: no collective, only the 1.5 GiB runtime; two or more: 2 x HCCL_BUFFSIZE (200 MB) more
    assert cap.overhead_gib(1, 200) == 1.5
    assert cap.overhead_gib(2, 200) == 1.5 + 400 / 1024  # 1.890625
    assert cap.overhead_gib(16, 512) == 2.5


def test_dense_model_is_spread_over_pipeline_stages_one_server_each() -> None:
    model = toy(16.0)  # BF16: 32e9 bytes = 29.80 GiB of weights
    # 1 server (one 20 GiB device): 29.80 GiB > 20 -> no. 2 servers (pp=2): 14.90 GiB + 1.5 + 2 x 512 MB
    # HCCL (2.5 GiB) + one 1024-token sequence (4 of 8 layers: 2 x 4 x 8 x 128 x 2 bytes x 1024 = 16 MiB)
    # = 17.42 GiB <= 20 -> 2
    args = (model, "none", 2, 1, 20.0, 1.0, 1024, 512)
    assert cap.servers_needed(*args, mtp=False) == 2
    assert cap.servers_needed(*args, limit=2, mtp=False) == 2
    assert cap.servers_needed(*args, limit=1, mtp=False) is None


def test_servers_needed_searches_up_to_64_servers() -> None:
    model = toy(600.0)  # BF16: 1.2e12 bytes = 1117.587 GiB
    # one 19.9 GiB device per server, pp=n; HCCL 2.5 GiB (world > 1); a 1024-token sequence on one layer
    # (ceil(8 / n) = 1): 2 x 1 x 8 x 128 x 2 x 1024 bytes = 4 MiB = 0.0039 GiB
    # n=64: 1117.587 / 64 = 17.462 + 2.504 = 19.966 > 19.9; n=65: 17.194 + 2.504 = 19.698 <= 19.9
    assert cap.servers_needed(model, "none", 2, 1, 19.9, 1.0, 1024, 512, mtp=False) is None
    assert cap.servers_needed(model, "none", 2, 1, 19.9, 1.0, 1024, 512, limit=65, mtp=False) == 65


def test_moe_model_uses_expert_parallelism_over_every_device() -> None:
    r1 = get_model("DeepSeek-R1-W8A8")
    # A2: 8 devices of 60.96 GiB x 0.92 = 56.08 GiB. One server (EP over 8): the busiest device holds
    # ceil(256 / 8) = 32 of 256 experts = 1/8 of ~654 GB of expert weights (76 GiB) -> no.
    # Two servers (EP over 16, TP 8 x DP 2): 16 experts = 38 GiB + the dense part / 8 -> fits.
    assert cap.servers_needed(r1, "w8a8", 2, 8, 60.96, 0.92, 16384, 200, mtp=False) == 2


def _capacity(budget: float, weights: float, overhead: float, kv_per_seq: float) -> Capacity:
    return Capacity(
        usable_gib=budget,
        budget_gib=budget,
        weights_gib=weights,
        overhead_gib=overhead,
        kv_gib_per_seq=kv_per_seq,
        max_num_seqs=1,
        full_seqs_fit=0,
    )


def test_longest_max_model_len_that_fits_is_a_multiple_of_1024() -> None:
    # 10 - 7 - 2.5 = 0.5 GiB left; one sequence of 32768 tokens needs 0.8 GiB -> 0.5 / 0.8 x 32768 =
    # 20480 tokens = 20 x 1024
    assert cap.max_len_that_fits(_capacity(10.0, 7.0, 2.5, 0.8), 32768) == 20480
    # 0.3 GiB left, 1.5 GiB per 8192 tokens -> 1638.4 tokens -> 1024
    assert cap.max_len_that_fits(_capacity(10.0, 7.2, 2.5, 1.5), 8192) == 1024
    # 0.1 GiB left, 1 GiB per 8192 tokens -> 819 tokens: not even 1024
    assert cap.max_len_that_fits(_capacity(10.0, 7.4, 2.5, 1.0), 8192) == 0


@pytest.mark.parametrize(
    ("weights_gib", "read_mb_s", "eager", "seconds"),
    [
        # read 600 GiB at 1024 MB/s = 600 s; 120 + 2 x 600 = 1320 = 44 x 30 (eager: no graph capture)
        (600.0, 1024, True, 1320),
        # + 240 s of graph capture = 1560 = 52 x 30
        (600.0, 1024, False, 1560),
        # 10 GiB at 1000 MB/s = 10.24 s; 120 + 20.48 + 240 = 380.48 -> 390 (rounded up to 30 s)
        (10.0, 1000, False, 390),
        # 1 GiB eager: 120 + 2.05 = 122.05 -> 150, below the 180 s floor
        (1.0, 1000, True, 180),
    ],
)
def test_startup_gate_reads_the_weights_twice_plus_fixed_costs(
    weights_gib: float, read_mb_s: int, eager: bool, seconds: int
) -> None:
    assert startup_timeout_s(weights_gib, read_mb_s, eager) == seconds
