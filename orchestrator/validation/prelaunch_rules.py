"""Launch failures that can be computed from the spec: what `orchestrator doctor` would find in the log later.

Each rule is the before-launch twin of a doctor rule (orchestrator/doctor/rules_serving.py, rules_hccl.py):
- ``max_num_batched_tokens < max_model_len`` with chunked prefill off (``ascend-scheduler-batched-tokens``);
- HCCL_BUFFSIZE below what MoE dispatch/combine needs under expert parallelism (``hccl-buffsize-too-small``);
- one HCCL_IF_BASE_PORT from serving.env shared by replicas on one server (``hccl-port-in-use``).
Memory utilization vs HBM is not here: validation/plan_checks/capacity.py already refuses weights
that exceed gpu_memory_utilization x the chip's usable HBM and a KV cache that cannot hold one max_model_len
sequence.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from orchestrator.catalog import ModelArch, nearest_table
from orchestrator.catalog.vllm_argv import read_args
from orchestrator.planning import hccl_ports
from orchestrator.planning.resolve import effective_quantization, resolve_model
from orchestrator.spec.findings import Finding, error, warning
from orchestrator.spec.parallelism import Parallelism
from orchestrator.spec.site import SiteSpec
from orchestrator.validation.extra_args import pinned_vllm

MIB = 1024 * 1024


def check(spec: SiteSpec) -> Iterator[Finding]:
    yield from _batched_tokens(spec)
    yield from _hccl_buffsize(spec)
    yield from _base_port(spec)


# --- 1. max_num_batched_tokens vs max_model_len ------------------------------------------------------------


def _chunked_prefill_off(spec: SiteSpec) -> str | None:
    """What turns chunked prefill off in extra_args (the option as given), or None when it stays on.

    vLLM's SchedulerConfig.enable_chunked_prefill is on unless --no-enable-chunked-prefill is given (the CLI
    default is None, which EngineArgs resolves to on for generative models in the V1 engine). vllm-ascend's
    Ascend scheduler (--additional-config '{"ascend_scheduler_config": {"enabled": true}}') runs without
    chunked prefill unless --enable-chunked-prefill is given (PR #4365's error says "Ascend scheduler is
    enabled without chunked prefill feature").
    """
    table = nearest_table(pinned_vllm(spec))
    explicit: bool | None = None
    given = ""
    ascend_scheduler = ""
    for use in read_args(spec.serving.extra_args, table):
        if use.option is None:
            continue
        if use.option.dest == "enable_chunked_prefill":
            explicit = not use.option.negative(use.spelling)
            given = use.given
        elif (
            use.option.dest == "additional_config"
            and use.values
            and _ascend_scheduler_enabled(use.values[-1])
        ):
            ascend_scheduler = use.given
    if explicit is False:
        return given
    if explicit is None and ascend_scheduler:
        return f"{ascend_scheduler} (ascend_scheduler_config enabled)"
    return None


def _ascend_scheduler_enabled(text: str) -> bool:
    try:
        config = json.loads(text)
    except ValueError:
        return False
    sched = config.get("ascend_scheduler_config") if isinstance(config, dict) else None
    return isinstance(sched, dict) and sched.get("enabled") is True


def _batched_tokens(spec: SiteSpec) -> Iterator[Finding]:
    s = spec.serving
    if s.max_num_batched_tokens is None or s.max_num_batched_tokens >= s.max_model_len:
        return
    off = _chunked_prefill_off(spec)
    if off is None:
        return  # chunked prefill splits long prompts: vLLM accepts the smaller batch
    # vLLM vllm/config/scheduler.py SchedulerConfig.verify_max_model_len: raises ValueError
    # "max_num_batched_tokens (N) is smaller than max_model_len (M)" when chunked prefill is off
    # (https://github.com/vllm-project/vllm/issues/28981; vllm-ascend PR #4365 for the Ascend scheduler).
    yield error(
        ("serving", "max_num_batched_tokens"),
        f"max_num_batched_tokens {s.max_num_batched_tokens} is smaller than max_model_len {s.max_model_len} "
        f"and chunked prefill is off ({off}); vLLM refuses to start",
        f"raise max_num_batched_tokens to {s.max_model_len}, lower max_model_len to "
        f"{s.max_num_batched_tokens}, or drop {off.split(' ')[0]} so chunked prefill stays on",
        "vllm-args",
    )


# --- 2. HCCL_BUFFSIZE vs expert parallelism ----------------------------------------------------------------


@dataclass(frozen=True)
class DispatchShape:
    """The terms of the CANN MoeDistributeDispatch/Combine buffer check (names as the operator logs them)."""

    max_bs: int
    token_need_size_dispatch: int
    token_need_size_combine: int
    ep_world_size: int
    local_moe_expert_num: int
    k: int
    shared_expert_num: int = 0


def needed_hccl_buffsize_mb(d: DispatchShape) -> int:
    """NEEDED_HCCL_BUFFSIZE in MB as the CANN operator computes it.

    The formula is the one the operator prints (vllm-ascend PR #5287, EZ9999 from
    moe_distribute_dispatch_v2_tiling.cc): ((maxBs x tokenNeedSizeDispatch x ep_worldsize x localMoeExpertNum)
    + (maxBs x tokenNeedSizeCombine x (k + sharedExpertNum))) x 2 bytes; that log reports 609MB for 608 MiB
    exactly, so the MB figure is the whole MiB count plus one (tests/unit/test_prelaunch_rules.py checks the
    logged case).
    """
    dispatch = d.max_bs * d.token_need_size_dispatch * d.ep_world_size * d.local_moe_expert_num
    combine = d.max_bs * d.token_need_size_combine * (d.k + d.shared_expert_num)
    return (dispatch + combine) * 2 // MIB + 1


def dispatch_shape(arch: ModelArch, par: Parallelism, max_num_seqs: int, quantized: bool) -> DispatchShape:
    """A lower-bound estimate of the operator's terms for one replica.

    Assumptions (the operator's exact token sizes are not published): a combined token is the BF16 hidden
    state (2 x h bytes: 4096 for h = 2048 in the PR #5287 log); a dispatched token is at least h bytes when
    the checkpoint is quantized (INT8 tokens) and 2 x h otherwise (the log's 4608 = 2 x 2048 + 512 includes
    alignment we leave out); maxBs is at least max_num_seqs (decode tokens per DP rank); shared experts are
    not counted. So the estimate is below the operator's figure, never above.
    """
    ep = par.tp * par.dp
    h = arch.hidden_size
    return DispatchShape(
        max_bs=max_num_seqs,
        token_need_size_dispatch=h if quantized else 2 * h,
        token_need_size_combine=2 * h,
        ep_world_size=ep,
        local_moe_expert_num=-(-arch.n_routed_experts // ep),
        k=arch.experts_per_token,
    )


def _hccl_buffsize(spec: SiteSpec) -> Iterator[Finding]:
    s = spec.serving
    try:
        arch = resolve_model(spec.model)
    except KeyError:
        return  # model_rules reports an unknown model
    if not arch.moe:
        return
    quantized = effective_quantization(spec.model, arch) != "none"
    for replica in s.replicas:
        par = replica.parallelism or s.parallelism
        if not par.ep or par.tp * par.dp < 2:
            continue
        need = needed_hccl_buffsize_mb(dispatch_shape(arch, par, s.max_num_seqs, quantized))
        if s.hccl.buffsize_mb >= need:
            continue
        # An estimate from below (dispatch_shape), so likely rather than certain: a warning. Too small a
        # buffer fails in MoE dispatch with "HCCL_BUFFSIZE is too SMALL" (EZ9999) or "The DDR address of
        # the MTE instruction is out of range" (vllm-ascend #2674, PR #6131, PR #5287).
        yield warning(
            ("serving", "hccl", "buffsize_mb"),
            f"replica '{replica.name}': MoE dispatch/combine with expert parallelism over "
            f"{par.tp * par.dp} ranks ({_ep_terms(arch, par, s.max_num_seqs)}) needs HCCL_BUFFSIZE of at "
            f"least about {need} MB; serving.hccl.buffsize_mb is {s.hccl.buffsize_mb}",
            f"set serving.hccl.buffsize_mb to {_round_up(need)} or more, or lower max_num_seqs",
            "hccl",
        )


def _ep_terms(arch: ModelArch, par: Parallelism, max_num_seqs: int) -> str:
    local = -(-arch.n_routed_experts // (par.tp * par.dp))
    return (
        f"hidden {arch.hidden_size}, {local} experts per rank, top-{arch.experts_per_token}, "
        f"max_num_seqs {max_num_seqs}"
    )


def _round_up(mb: int, step: int = 64) -> int:
    return -(-mb // step) * step


# --- 4. one HCCL base port per co-located replica ----------------------------------------------------------


def _base_port(spec: SiteSpec) -> Iterator[Finding]:
    s = spec.serving
    if hccl_ports.ENV not in s.env:
        return  # the plan gives each replica on a shared server its own base (planning/hccl_ports.py)
    for server, names in hccl_ports.colocated(spec).items():
        # serving.env is the same for every replica, so both HCCL jobs listen from the same base port:
        # "Failed to bind the IP port" (EJ0003/EI0019; vllm-ascend #405, PR #16205: give each job its own
        # HCCL_IF_BASE_PORT when jobs share a host).
        yield error(
            ("serving", "env", hccl_ports.ENV),
            f"replicas {' and '.join(repr(n) for n in names)} share server '{server}' and all get "
            f"{hccl_ports.ENV}={s.env[hccl_ports.ENV]} from serving.env; only the first can bind its HCCL "
            "ports",
            f"remove {hccl_ports.ENV} from serving.env (it applies to every replica): the plan then gives "
            f"each replica on a shared server its own ({hccl_ports.BASE_PORT} + {hccl_ports.PORT_STEP} x "
            "its place on the server)",
            "hccl",
        )
        return
