"""Rules: HCCL buffer for MoE dispatch, graph capture, HCCL ports, NPU-NIC links, cross-node timeouts and
interfaces.

Each rule cites the public reports its log line and fix were read from (research notes R22-R31)."""

from __future__ import annotations

from orchestrator.doctor.rule import Pattern, Preflight, Rule, p
from orchestrator.doctor.sources import FAQ, INSTALL, va, va_file, vap

_MOE_OP = r"MoeDistributeDispatch|MoeDistributeCombine|dispatch_ffn_combine|\bmc2\b"
_NIC_DOWN = r"\bEJ0002\b|The network port is down|rdma init fail|ra nic init rdma failed|ra rdev init failed"
"""Lines HCCP/HCCL print when an NPU NIC's RDMA (RoCE) port did not come up: the listen failure after them
is not a port conflict."""

GRAPH_RULES = (
    Rule(
        id="hccl-buffsize-too-small",
        area="HCCL buffer (MoE)",
        title="HCCL_BUFFSIZE is too small for MoE dispatch/combine",
        patterns=(
            Pattern(r"HCCL_BUFFSIZE(?:_[A-Z]+)? is too SMALL"),
            Pattern(r"The DDR address of the MTE instruction is out of range", near=_MOE_OP),
        ),
        codes=("EZ9999", "561002"),
        cause="the MoE dispatch/combine operators stage tokens in the HCCL buffer; its size grows with the "
        "batch per rank, hidden size, top-k and experts per rank. When the operator's own check does not "
        "fire the symptom is an AICore 'MTE instruction is out of range' error.",
        fix="export HCCL_BUFFSIZE=<needed MB, rounded up> on every rank (the error line names the need), or "
        "lower --max-num-batched-tokens / the batch per DP rank.",
        preflight=Preflight.yes,
        sources=(
            *vap(5287),
            *va(2674),
            *vap(6131),
            *va(8818),
            *vap(4512),
            va_file("csrc/mc2/dispatch_ffn_combine/op_host/dispatch_ffn_combine_tiling.cpp"),
            *va(16835),
        ),
        example="EZ9999[PID: 17833] 2025-12-23-07:36:19.237.396 (EZ9999):  HCCL_BUFFSIZE is too SMALL, maxBs "
        "= 512, h = 2048, epWorldSize = 2, localMoeExpertNum = 64, sharedExpertNum = 0, "
        "tokenNeedSizeDispatch = 4608, tokenNeedSizeCombine = 4096, k = 8, NEEDED_HCCL_BUFFSIZE(((maxBs * "
        "tokenNeedSizeDispatch * ep_worldsize * localMoeExpertNum) + (maxBs * tokenNeedSizeCombine * (k + "
        "sharedExpertNum))) * 2) = 609MB, HCCL_BUFFSIZE=200MB.",
        detail=r"=\s*(?P<needed>\d+)MB, HCCL_BUFFSIZE=(?P<set>\d+)MB",
        hint="the operator needs HCCL_BUFFSIZE >= {needed} (MB) and got {set}: export HCCL_BUFFSIZE={needed} "
        "or more on every rank",
        inferred="HCCL_BUFFSIZE_EP (vllm-ascend 16835) is matched as the same check of the EP group's "
        "buffer; the thread raised HCCL_BUFFSIZE.",
    ),
    Rule(
        id="aclgraph-stream-exhausted",
        area="graph capture",
        title="graph capture ran out of NPU streams (207008 / EL0009, or 207005 and 'Alloc sq cq fail')",
        patterns=p(
            r"Insufficient_Stream_Resources\(EL0009\)",
            r"AclmdlRICaptureBegin.*error code is 20700[58]",
            r"\[SqCqManage\]Alloc sq cq fail",
            r"New capture stream failed",
            r"ACLgraph has insufficient available streams",
        ),
        codes=("207008", "EL0009", "207005"),
        cause="every captured graph uses NPU streams (about layers x capture sizes); the device has about "
        "2048. Older drivers report it as 207005 with the canned text 'Failed to apply for memory', which "
        "reads like a disk or memory problem.",
        fix="capture fewer sizes: --compilation-config '{\"cudagraph_capture_sizes\": [...]}' with fewer "
        "entries or a lower max_cudagraph_capture_size; use cudagraph mode FULL_DECODE_ONLY; upgrade the "
        "driver/CANN; confirm with --enforce-eager (vllm-ascend FAQ 17). Never put two replicas on one NPU.",
        preflight=Preflight.yes,
        sources=(
            FAQ,
            va_file("vllm_ascend/compilation/acl_graph.py"),
            *va(8393, 9564, 9596, 3389, 9691, 1168),
        ),
        example="[PID: ...] Insufficient_Stream_Resources(EL0009): The stream resources are insufficient.",
        related=("npu-shared-sqcq-exhausted",),
    ),
    Rule(
        id="aclgraph-capture-unsupported-op",
        area="graph capture",
        title="a synchronous copy ran during graph capture (107030)",
        patterns=p(r"ErrCode=107030", r"the current capture mode does not support this operation"),
        codes=("107030", "507011"),
        cause="a synchronous memcpy was issued while a graph was captured or replayed; reported when HBM was "
        "tight.",
        fix="run with --enforce-eager (or cudagraph_mode NONE) for now, lower --gpu-memory-utilization, and "
        "upgrade vllm-ascend.",
        preflight=Preflight.no,
        sources=va(6002, 7676),
        example="rtMemcpy:ErrCode=107030, desc=[the current capture mode does not support this operation]",
        inferred="no maintainer-confirmed fix was seen; the fix is the reports' workaround.",
    ),
    Rule(
        id="mla-graph-heads-unsupported",
        area="graph capture",
        title="graph mode's MLA kernel does not support this heads-per-rank ratio",
        patterns=p(
            r"numHeads / numKvHeads = \d+, MLA only support \{32, 64, 128\}",
            r"The allowed number of queries per kv when enabling both MLA and Graph mode only support "
            r"\{32, 64, 128\}",
        ),
        codes=("EZ9999",),
        cause="the incremental flash-attention kernel used in graph mode supports num_heads / TP / "
        "num_kv_heads of 32, 64 or 128 only (DeepSeek-V2-Lite is not supported).",
        fix="choose TP so that num_heads / TP / num_kv_heads is 32, 64 or 128, or disable graph mode "
        "(vllm-ascend FAQ 13).",
        preflight=Preflight.yes,
        sources=(FAQ, *va(1451), *vap(933)),
        example="[rank0]: EZ9999: [PID: 62938] 2025-05-27-06:52:12.455.807 numHeads / numKvHeads = 8, MLA "
        "only support {32, 64, 128}.[FUNC:CheckMlaAttrs]"
        "[FILE:incre_flash_attention_tiling_check.cc][LINE:1218]",
        detail=r"numHeads / numKvHeads = (?P<ratio>\d+)",
        hint="this replica's ratio is {ratio}",
    ),
    Rule(
        id="aclgraph-model-unsupported",
        area="graph capture",
        title="this vllm-ascend release has no ACL graph mode for the model (eager or TorchAir only)",
        patterns=p(r"ACL Graph does not support \w+"),
        codes=(),
        cause="ACL graph capture is the default for V1 engines, but a release may refuse a model family it "
        "cannot capture yet (DeepSeek in 0.9.x ran only eager or in TorchAir graph mode).",
        fix="start with --enforce-eager, or enable TorchAir graph mode as the message says "
        '(--additional-config \'{"torchair_graph_config":{"enabled":true}}\'), or use a vllm-ascend release '
        "whose graph mode guide lists the model.",
        preflight=Preflight.yes,
        sources=(*va(1458), *vap(836, 1083)),
        example="NotImplementedError: ACL Graph does not support deepseek. Please try torchair graph mode to "
        "serve deepseek models on vllm-ascend. Or set `enforce_eager=True` to use eager mode",
        detail=r"ACL Graph does not support (?P<model>\w+)",
        hint="the refused model family: {model}",
        related=("mla-graph-heads-unsupported",),
    ),
)

NETWORK_RULES = (
    Rule(
        id="hccl-port-in-use",
        area="HCCL ports",
        title="HCCL could not bind its port: another replica or a stale process uses it",
        patterns=(
            *p(
                r"\bEJ0003\b.*Failed to bind the IP port",
                r"Communication_Error_Bind_IP_Port\((?:EJ0003|EI0019)\)",
            ),
            Pattern(r"host nic listen start failed, port\[\d+\]", unless=_NIC_DOWN),
            Pattern(r"listen on ip\[[^\]]+\] and specific port\[\d+\] fail", unless=_NIC_DOWN),
        ),
        codes=("EJ0003", "EI0019"),
        cause="two HCCL jobs on one host use the same ports (60000+ by default; 16666 for the "
        "prefill/decode connector), or a stale vllm serve still holds them.",
        fix="give each replica on a host its own HCCL_IF_BASE_PORT (e.g. 60000 + 100 x replica), or set "
        "HCCL_HOST_SOCKET_PORT_RANGE=auto and HCCL_NPU_SOCKET_PORT_RANGE=auto; kill stale vllm serve "
        "processes (`ss -ltnp 'sport >= :60000'` shows the holder).",
        preflight=Preflight.yes,
        sources=(
            *va(405),
            "https://github.com/InternLM/lmdeploy/pull/4722",
            *vap(16205),
            *va(4725, 1955, 11968),
            "https://github.com/alibaba/ROLL/pull/421",
            va_file(".agents/skills/vllm-ascend-model-adapter/references/troubleshooting.md"),
        ),
        example="EJ0003: [PID: 159] 2025-03-26-17:01:02.816.428 Failed to bind the IP port. Reason: The IP "
        "address and port have been bound already.",
        detail=r"port\[(?P<port>\d+)\]",
        hint="port {port} was taken",
        inferred="a listen failure is a port conflict only without an NPU NIC failure beside it "
        "(npu-nic-port-down prints the same listen line after 'ra rdma init failed').",
        related=("npu-nic-port-down",),
    ),
    Rule(
        id="npu-nic-port-down",
        area="NPU NIC",
        title="an NPU NIC's RoCE port is down or not set up (EJ0002, RDMA init failed)",
        patterns=p(
            r"\bEJ0002\b.{0,80}The network port is down",
            r"ra rdma init failed, devid\[\d+\]",
            r"ra nic init rdma failed",
        ),
        codes=("EJ0002",),
        cause="HCCL could not bring up the RDMA (RoCE) port of an NPU: its link is down (cable, optics, "
        "switch port) or the NPU NIC has no usable address. HCCL then also fails to listen on that NIC, "
        "which reads like a port conflict but is not one.",
        fix="check the NPU NIC the log names (devid[N], ip[...]): `hccn_tool -i N -link -g` must say UP, "
        "`hccn_tool -i N -ip -g` must show the address /etc/hccn.conf gives it; fix the cable or switch port "
        "or the hccn configuration, then restart the replica.",
        preflight=Preflight.yes,
        sources=(*va(1815), INSTALL),
        example="RuntimeError: EJ0002: [PID: 38079] 2025-07-15-12:45:31.202.787 The network port is down.",
        detail=r"devid\[(?P<device>\d+)\] ip\[(?P<ip>[^\]]+)\]",
        hint="NPU {device} (NIC address {ip}) failed RDMA init: run `hccn_tool -i {device} -link -g`",
        inferred="the thread has no maintainer answer; the cause is read from the EJ0002 text and the "
        "HCCP/HCCL RDMA init errors of its plog.",
        priority=60,
        related=("hccl-port-in-use", "npu-nic-tls-or-link"),
    ),
    Rule(
        id="hccl-get-socket-timeout",
        area="cross-node HCCL",
        title="a peer rank never connected within HCCL_CONNECT_TIMEOUT (EI0006)",
        patterns=p(r"EI0006\)?:?.{0,80}Getting socket times out", r"wait socket establish timeout"),
        codes=("EI0006",),
        cause="a peer rank did not connect in time: it failed earlier, started late, or the link between the "
        "NPUs is down or their TLS settings differ.",
        fix="read the other ranks' logs for an earlier error first; start every node within the timeout or "
        "raise HCCL_CONNECT_TIMEOUT (e.g. 600) on every node; check the NPU links and TLS with "
        "`hccn_tool -i N -tls -g` (npu-nic-tls-or-link).",
        preflight=Preflight.partly,
        sources=(*va(5461, 9447, 486, 1955), "https://github.com/vllm-project/afd-plugin/issues/229"),
        example="[PID: 749] 2025-12-29-03:16:15.787.356 Get_Socket_Timeout(EI0006): Getting socket times "
        "out. Reason: 1. The remote does not initiate a connect request. some NPUs in the cluster are "
        "abnormal.",
        related=("npu-nic-tls-or-link",),
    ),
    Rule(
        id="npu-nic-tls-or-link",
        area="NPU NIC",
        title="NPU-NIC TLS settings differ or a link is down (checked before launch; in logs as EI0006)",
        patterns=(),
        codes=("EI0006",),
        cause="HCCL links between NPUs fail when the TLS switch differs between NPUs or a link is not UP; "
        "the log shows it only as an EI0006 socket timeout (hccl-get-socket-timeout).",
        fix="make the TLS switch the same on every NPU of every node (`for i in {0..7}; do hccn_tool -i $i "
        "-tls -s enable 0; done`), bring links UP (`hccn_tool -i N -link -g`), fix /etc/hccn.conf; check "
        "with `hccn_tool -i N -net_health -g` and `hccn_tool -i 0 -ping -g address PEER`.",
        preflight=Preflight.yes,
        sources=(*va(10224, 5461), INSTALL),
        inferred="no log line of its own: the EI0006 text names TLS and links, so the log scan reports "
        "hccl-get-socket-timeout and points here.",
    ),
    Rule(
        id="hccl-transport-init-failed",
        area="cross-node HCCL",
        title="HCCL could not create the link to a peer NPU (EI0009)",
        patterns=p(r"\bEI0009\b.*Transport init error"),
        codes=("EI0009",),
        cause="the peer NPU's side of the link was not ready or is abnormal.",
        fix="read the peer rank's log for its error; verify the NPU ids and links of both ends.",
        preflight=Preflight.partly,
        sources=va(3162),
        example="[rank1]: EI0009: [PID: 2225827] 2025-09-24-20:59:48.119.066 Transport init error. Reason: "
        "[Create][DestLink]Create Dest error! createLink para:rank[1]-localUserrank[1]-localIpAddr"
        "[172.16.0.114], dst_rank[0]-remoteUserrank[0]-remote_ip_addr[172.16.0.114]",
        inferred="the fix is generic (one report).",
    ),
    Rule(
        id="hccl-exec-timeout",
        area="cross-node HCCL",
        title="a collective operation timed out (HCCL_EXEC_TIMEOUT / watchdog)",
        patterns=p(
            r"hccl fftsplus task timeout occurred",
            r"Watchdog caught collective operation timeout",
            r"stuck notify num",
        ),
        codes=(),
        cause="one rank stalled longer than HCCL_EXEC_TIMEOUT (1836 s by default): an earlier error on "
        "another rank, load imbalance, or link errors (CQE) on the NPU network.",
        fix="find the earliest error on the other ranks and nodes; grep -rn 'error cqe' in the plog for link "
        "errors; only then raise HCCL_EXEC_TIMEOUT (keep VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS above it).",
        preflight=Preflight.partly,
        sources=("https://github.com/InternLM/lmdeploy/issues/3354", *va(16646, 382, 5468), *vap(13233)),
        example="hccl fftsplus task timeout occurred during task execution, stream_id:9, sq_id:9, "
        "task_id:51052, stuck notify num:1, timeout=1836s.",
        related=("hccl-get-socket-timeout",),
    ),
    Rule(
        id="gloo-ifname-loopback",
        area="interfaces",
        title="torch.distributed bound to loopback or a wrong interface (GLOO/HCCL socket ifname)",
        patterns=p(
            r"Using the loopback address as fallback",
            r"Gloo connectFullMesh failed",
            r"DistStoreError: Timed out after \d+ seconds waiting for clients",
        ),
        codes=(),
        cause="the host name does not resolve to a routable address, so Gloo falls back to 127.0.0.1 and "
        "ranks on other nodes cannot reach it; a wrong HCCL_IF_IP has the same effect for HCCL.",
        fix="set GLOO_SOCKET_IFNAME, TP_SOCKET_IFNAME and HCCL_SOCKET_IFNAME to the routable host NIC and "
        "HCCL_IF_IP / VLLM_HOST_IP to that NIC's IPv4 address on every node.",
        preflight=Preflight.yes,
        sources=(
            "https://github.com/vllm-project/vllm/issues/7074",
            "https://github.com/aws-samples/aws-do-eks/pull/50",
            *va(168, 2879, 167),
        ),
        example="[rank9]:[W ProcessGroupGloo.cpp:721] Warning: Unable to resolve hostname to a (local) "
        "address. Using the loopback address as fallback. Manually set the network interface to bind to "
        "with GLOO_SOCKET_IFNAME. (function operator())",
        inferred="the Gloo lines come from upstream vLLM (not Ascend); no HCCL log line for a wrong "
        "HCCL_IF_IP was found.",
    ),
)
