"""The `vllm serve` argument list and container environment for each replica member."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from types import MappingProxyType

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
        "VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT",  # PD prefill: disaggregation.abort_request_timeout_s
    }
)
"""Environment variables the plan sets itself; the spec may not set them in serving.env."""

PLAN_FIELDS: Mapping[str, str] = MappingProxyType(
    {
        "model": "model.weights_path",
        "tensor_parallel_size": "serving.parallelism.tp",
        "pipeline_parallel_size": "serving.parallelism.pp",
        "data_parallel_size": "serving.parallelism.dp",
        "enable_expert_parallel": "serving.parallelism.ep",
        "quantization": "model.quantization",
        "dtype": "model.dtype",
        "max_model_len": "serving.max_model_len",
        "max_num_seqs": "serving.max_num_seqs",
        "max_num_batched_tokens": "serving.max_num_batched_tokens",
        "gpu_memory_utilization": "serving.gpu_memory_utilization",
        "kv_cache_dtype": "serving.kv_cache_dtype",
        "trust_remote_code": "model.trust_remote_code",
        "enforce_eager": "serving.enforce_eager",
        "safetensors_load_strategy": "model.load_strategy (or model.storage)",
        "distributed_executor_backend": "serving.replicas[].multi_node_tp (the plan picks Ray or mp)",
        "host": "servers[].address (the head server's address)",
        "port": "serving.port (or serving.replicas[].port)",
        "served_model_name": "model.served_name",
        "api_key": "serving.api_key",
        "headless": "serving.replicas[].servers (the replica layout)",
        "data_parallel_size_local": "serving.replicas[].servers (the replica layout)",
        "data_parallel_start_rank": "serving.replicas[].servers (the replica layout)",
        "data_parallel_address": "serving.replicas[].servers (the head server's HCCL_IF_IP)",
        "data_parallel_rpc_port": "serving.dp_rpc_port",
        # not rendered, but each contradicts the layout the plan renders (ranks, nodes, devices, endpoint)
        "data_parallel_rank": "serving.replicas[].servers (the plan gives each server its DP ranks)",
        "data_parallel_hybrid_lb": "serving.replicas[].servers (the plan runs internal DP load balancing)",
        "data_parallel_external_lb": "serving.replicas[].servers (the plan runs internal DP load balancing)",
        "data_parallel_multi_port_external_lb": "serving.replicas[].servers (the plan runs one API server)",
        "data_parallel_backend": "serving.replicas[].multi_node_tp (the plan picks Ray or mp)",
        "nnodes": "serving.replicas[].servers (the replica's node count)",
        "node_rank": "serving.replicas[].servers (each member's position)",
        "master_addr": "serving.replicas[].servers (the head server's address)",
        "master_port": "serving.replicas[].servers (the plan's rendezvous)",
        "prefill_context_parallel_size": "serving.parallelism (the device mask covers tp x pp x dp devices)",
        "device_ids": "serving.replicas[].devices (the plan sets ASCEND_RT_VISIBLE_DEVICES)",
        "uds": "serving.port (health checks and the gateway use host:port)",
    }
)
"""`vllm serve` destinations (argparse ``dest``) the plan decides, and the spec field to change instead.

Every option the plan renders must be here (tests/unit/test_extra_args.py builds the set of rendered options
from the argument builders below, every switch on, and checks it), plus options the plan does not render
but that contradict what it renders. extra_args may not set any of them, in any
spelling (``--max_model_len``, ``-tp``, ``--no-enable-expert-parallel``): the validator maps each extra
argument to its dest with the pinned release's flag table."""


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
    load: Sequence[str] = (),
) -> list[str]:
    """Arguments shared by every member that runs an engine; ``load`` is the plan's weight loading
    (planning/load.py)."""
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
    args += load
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
    """head_address: the head's HCCL_IF_IP (overrides.hccl_if_ip, else its address): vllm-ascend's DeepSeek-R1
    tutorial @v0.23.0 (docs/source/tutorials/models/DeepSeek-R1.md, 5.2): "--data-parallel-address ... must be
    consistent with `local_ip` set on Node 0", the address it also exports as HCCL_IF_IP."""
    args = ["--data-parallel-size-local", str(local)]
    if headless:
        args = ["--headless", *args, "--data-parallel-start-rank", str(start_rank)]
    return [*args, "--data-parallel-address", head_address, "--data-parallel-rpc-port", str(rpc_port)]


def op_expansion_mode(hccl: Hccl, chip: ChipFacts, servers: int) -> str | None:
    """HCCL_OP_EXPANSION_MODE: the spec's value, else the chip's default (A2/A3 AIV, 300I Duo HOST); None (not
    set: CANN's default, HOST) for a replica over several A2 servers. The CANN reference runs AIV AlltoAllV
    -- expert parallelism's dispatch -- within one server only on Atlas A2 (hiascend.com/document/detail/zh/
    canncommercial/850/maintenref/envvar/envref_07_0096.html), and vllm-ascend's two-A2 DeepSeek-R1 recipe
    leaves it unset (docs/source/tutorials/models/DeepSeek-R1.md @v0.23.0, 5.2); A3 runs AIV across the
    servers of a supernode (CANN 9.0 reference, same page)."""
    if hccl.op_expansion_mode is not None:
        return hccl.op_expansion_mode
    if servers > 1 and chip.hccl_aiv_one_server:
        return None
    return chip.hccl_op_expansion_default


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
    base_port: int | None = None,
    servers: int = 1,
) -> list[tuple[str, str]]:
    # The container is given only the member's /dev/davinciN (vllm_serve role): inside it the runtime numbers
    # them 0..n-1 (logical IDs, CANN runtime API "Relationships Between the User Device ID, Logical Device ID,
    # and Physical Device ID"; envref ASCEND_RT_VISIBLE_DEVICES: "Device ID indicates the logical ID"), so
    # the mask is 0..n-1, never the host's N (ascend_sim/payloads/fake-vllm/fake_vllm/devices.py cites the
    # sources).
    env: dict[str, str] = {"ASCEND_RT_VISIBLE_DEVICES": ",".join(str(i) for i in range(len(devices)))}
    env["PYTORCH_NPU_ALLOC_CONF"] = "expandable_segments:True"
    env["TASK_QUEUE_ENABLE"] = "1"
    if world_size > 1:
        env["HCCL_IF_IP"] = if_ip
        env["HCCL_BUFFSIZE"] = str(hccl.buffsize_mb)
        env["HCCL_CONNECT_TIMEOUT"] = str(hccl.connect_timeout_s)
        env["HCCL_EXEC_TIMEOUT"] = str(hccl.exec_timeout_s)
        mode = op_expansion_mode(hccl, chip, servers)
        if mode is not None:
            env["HCCL_OP_EXPANSION_MODE"] = mode
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
        if base_port is not None:
            env["HCCL_IF_BASE_PORT"] = str(base_port)  # a replica sharing the server: planning/hccl_ports.py
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
