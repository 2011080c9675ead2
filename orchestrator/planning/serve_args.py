"""The `vllm serve` argument list and container environment for each replica member."""

from __future__ import annotations

import json

from orchestrator.catalog import ChipFacts
from orchestrator.spec.serving import Hccl, Serving

RAY_GCS_PORT = 6379
"""The Ray head's GCS port: Ray's default for `ray start --head`, the vllm-ascend recipe's `head:6379`."""

DERIVED_ENV = frozenset(
    {
        "ASCEND_RT_VISIBLE_DEVICES",
        "ASCEND_VISIBLE_DEVICES",
        "HCCL_IF_IP",
        "HCCL_BUFFSIZE",
        "HCCL_CONNECT_TIMEOUT",
        "HCCL_EXEC_TIMEOUT",
        "HCCL_OP_EXPANSION_MODE",
        "HCCL_SOCKET_IFNAME",
        "GLOO_SOCKET_IFNAME",
        "TP_SOCKET_IFNAME",
        "HCCL_INTRA_PCIE_ENABLE",
        "HCCL_INTRA_ROCE_ENABLE",
        "HCCL_DETERMINISTIC",
        "LCCL_DETERMINISTIC",
        "VLLM_API_KEY",
        "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES",
        "VLLM_HOST_IP",
    }
)
"""Environment variables the plan sets itself; the spec may not set them in serving.env."""

DERIVED_FLAGS = frozenset(
    {
        "--host",
        "--port",
        "--served-model-name",
        "--api-key",
        "--tensor-parallel-size",
        "-tp",
        "--pipeline-parallel-size",
        "-pp",
        "--data-parallel-size",
        "-dp",
        "--data-parallel-size-local",
        "--data-parallel-start-rank",
        "--data-parallel-address",
        "--data-parallel-rpc-port",
        "--headless",
        "--enable-expert-parallel",
        "--quantization",
        "--dtype",
        "--max-model-len",
        "--max-num-seqs",
        "--max-num-batched-tokens",
        "--gpu-memory-utilization",
        "--kv-cache-dtype",
        "--trust-remote-code",
        "--enforce-eager",
        "--distributed-executor-backend",
        "--model",
    }
)
"""Flags the plan renders from spec fields; extra_args may not repeat them."""


def engine_args(
    *,
    weights_path: str,
    serving: Serving,
    tp: int,
    pp: int,
    dp: int,
    ep: bool,
    quantization: str,
    dtype: str,
    trust_remote_code: bool,
    backend: str | None,
) -> list[str]:
    """Arguments shared by every member that runs an engine."""
    args = ["serve", weights_path, "--tensor-parallel-size", str(tp)]
    if pp > 1:
        args += ["--pipeline-parallel-size", str(pp)]
    if dp > 1:
        args += ["--data-parallel-size", str(dp)]
    if ep:
        args.append("--enable-expert-parallel")
    if quantization in ("w8a8", "w4a8"):
        args += ["--quantization", "ascend"]
    args += ["--dtype", dtype]
    args += ["--max-model-len", str(serving.max_model_len), "--max-num-seqs", str(serving.max_num_seqs)]
    if serving.max_num_batched_tokens is not None:
        args += ["--max-num-batched-tokens", str(serving.max_num_batched_tokens)]
    args += ["--gpu-memory-utilization", f"{serving.gpu_memory_utilization:g}"]
    # kv_cache_dtype int8 renders no flag: vllm-ascend's C8 KV cache is switched on by the msmodelslim
    # checkpoint (quant_model_description.json kv_cache_type: C8) under --quantization ascend, and vLLM's
    # --kv-cache-dtype has no int8 choice (vllm_ascend/quantization/modelslim_config.py @v0.23.0).
    if trust_remote_code:
        args.append("--trust-remote-code")
    if serving.enforce_eager:
        args.append("--enforce-eager")
    if backend is not None:
        args += ["--distributed-executor-backend", backend]
    return args


def api_args(host: str, port: int, served: str) -> list[str]:
    return ["--host", host, "--port", str(port), "--served-model-name", served]


def dp_args(*, local: int, start_rank: int, head_address: str, rpc_port: int, headless: bool) -> list[str]:
    args = ["--data-parallel-size-local", str(local)]
    if headless:
        args = ["--headless", *args, "--data-parallel-start-rank", str(start_rank)]
    return [*args, "--data-parallel-address", head_address, "--data-parallel-rpc-port", str(rpc_port)]


def op_expansion_mode(hccl: Hccl, chip: ChipFacts) -> str:
    """HCCL_OP_EXPANSION_MODE: the spec's value, else the chip's default (A2/A3 AIV, 300I Duo HOST)."""
    return hccl.op_expansion_mode or chip.hccl_op_expansion_default


def member_env(
    *,
    devices: tuple[int, ...],
    world_size: int,
    hccl: Hccl,
    chip: ChipFacts,
    if_ip: str,
    socket_ifname: str | None,
    ray: bool,
    extra: dict[str, str],
) -> list[tuple[str, str]]:
    env: dict[str, str] = {"ASCEND_RT_VISIBLE_DEVICES": ",".join(str(d) for d in devices)}
    env["PYTORCH_NPU_ALLOC_CONF"] = "expandable_segments:True"
    env["TASK_QUEUE_ENABLE"] = "1"
    if world_size > 1:
        env["HCCL_IF_IP"] = if_ip
        env["HCCL_BUFFSIZE"] = str(hccl.buffsize_mb)
        env["HCCL_CONNECT_TIMEOUT"] = str(hccl.connect_timeout_s)
        env["HCCL_EXEC_TIMEOUT"] = str(hccl.exec_timeout_s)
        env["HCCL_OP_EXPANSION_MODE"] = op_expansion_mode(hccl, chip)
        if hccl.intra_pcie_enable is not None:
            env["HCCL_INTRA_PCIE_ENABLE"] = "1" if hccl.intra_pcie_enable else "0"
        if hccl.intra_roce_enable is not None:
            env["HCCL_INTRA_ROCE_ENABLE"] = "1" if hccl.intra_roce_enable else "0"
        ifname = socket_ifname or hccl.socket_ifname
        if ifname:
            for key in ("HCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME"):
                env[key] = ifname
        if hccl.deterministic:
            env["HCCL_DETERMINISTIC"] = "true"
            env["LCCL_DETERMINISTIC"] = "1"
    if ray:
        # vllm-ascend tutorials/features/ray.md: set before `ray start` on every node, so Ray leaves the
        # node's ASCEND_RT_VISIBLE_DEVICES to vLLM. VLLM_HOST_IP: vLLM asks the placement group for a
        # bundle on node:<VLLM_HOST_IP>, which must be the IP the node registered with Ray
        # (vllm/v1/executor/ray_utils.py, "make sure the IP addresses used by ray cluster are the same as
        # VLLM_HOST_IP"); both are this node's HCCL_IF_IP, the recipe's {local_ip}.
        env["RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES"] = "1"
        env["VLLM_HOST_IP"] = if_ip
    for key in sorted(extra):
        env[key] = extra[key]
    return list(env.items())


def ray_start_args(
    *, head: bool, node_ip: str, head_ip: str, npus: int, port: int = RAY_GCS_PORT
) -> list[str]:
    """`ray start` argv (after the `ray` command) for one node of a Ray replica.

    vllm-ascend tutorials/features/ray.md: `ray start --head` on the head, `ray start
    --address='{head_node_ip}:6379' --node-ip-address={local_ip}` on each worker. Added here:
    - `--node-ip-address` on the head too: Ray otherwise guesses the IP from the default route, and the
      workers and vLLM's placement group (node:<VLLM_HOST_IP>) must see the same one;
    - `--resources '{"NPU": N}'`: the NPU count this node offers. vllm-ascend asks Ray for the "NPU"
      resource (vllm_ascend/platform.py ray_device_key); Ray would detect it with AscendCL or by globbing
      /dev/davinci? (ray/_private/accelerators/npu.py, single-digit devices only), capped by the
      ASCEND_RT_VISIBLE_DEVICES mask. Given explicitly, Ray checks it against the mask and refuses more
      ("Attempting to start raylet with N NPU, but ASCEND_RT_VISIBLE_DEVICES contains [...]").
    - `--disable-usage-stats`: no usage report from servers that are often offline;
    - `--block` on workers: `ray start` is the worker container's only process and keeps it alive. The head
      returns after starting Ray, then runs `vllm serve` in the same container (its driver finds the
      local Ray through /tmp/ray, as in the recipe).
    """
    args = ["start", "--head", "--port", str(port)] if head else ["start", "--address", f"{head_ip}:{port}"]
    args += ["--node-ip-address", node_ip, "--resources", json.dumps({"NPU": npus}), "--disable-usage-stats"]
    if not head:
        args.append("--block")
    return args
