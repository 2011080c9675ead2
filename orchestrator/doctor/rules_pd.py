"""Rules: prefill/decode disaggregation with the Mooncake connector - the startup checks of its
configuration (handshake ports, TP sizes, engine ids, kv_connector_extra_config, connector names, the
recompute scheduler) and a Mooncake install without its Ascend transport.

The log lines are read from public reports or from the format strings of vllm-ascend v0.23.0 (the pinned
release) and Mooncake; each rule cites them. rules_pd_transfer.py has the failures of the KV transfer itself.
"""

from __future__ import annotations

from orchestrator.doctor.rule import Pattern, Preflight, Rule, p
from orchestrator.doctor.sources import mooncake_at, va, va_at, vap

PIN = "v0.23.0"
"""The vllm-ascend release the connector's messages were read from."""

CONNECTOR = va_at(PIN, "vllm_ascend/distributed/kv_transfer/kv_p2p/mooncake_connector.py")
HYBRID = va_at(PIN, "vllm_ascend/distributed/kv_transfer/kv_p2p/mooncake_hybrid_connector.py")
TRANSFER_ENGINE = va_at(PIN, "vllm_ascend/distributed/kv_transfer/utils/mooncake_transfer_engine.py")
TUTORIAL = va_at(PIN, "docs/source/tutorials/features/pd_disaggregation_mooncake_multi_node.md")
DESIGN = va_at(PIN, "docs/source/developer_guide/Design_Documents/disaggregated_prefill.md")
CI_PD = va_at(PIN, "tests/e2e/weekly/multi_node/external_dp/config/DeepSeek_V3.1T_MTP1_PD.yaml")
RELEASE_NOTES = va_at(PIN, "docs/source/user_guide/release_notes.md")
PLATFORM = va_at(PIN, "vllm_ascend/platform.py")
ASCEND_CONFIG = va_at(PIN, "vllm_ascend/ascend_config.py")
KV_POOL = va_at(PIN, "docs/source/user_guide/feature_guide/kv_pool.md")
MULTI_TRANSPORT = mooncake_at(
    "00390e6e8a37d18bebcd26bf4120192b78d6c740", "mooncake-transfer-engine/src/multi_transport.cpp"
)
VLLM_FACTORY = (
    "https://github.com/vllm-project/vllm/blob/007c643b4abb7a79e69ef2b343b3dc80eb643c0d/"
    "vllm/distributed/kv_transfer/kv_connector/factory.py"
)
CPYTHON_IMPORT = "https://github.com/python/cpython/blob/v3.11.0/Lib/importlib/_bootstrap.py"

_MOONCAKE_NEAR = r"KVCacheSendingThread|mooncake_\w*connector\.py"
"""Lines of the Mooncake connector around a ZMQ bind failure (vLLM's own ZMQ sockets fail the same way)."""

PD_CONFIG_RULES = (
    Rule(
        id="pd-kv-port-in-transport-range",
        area="PD disaggregation",
        title="a Mooncake handshake port (kv_port + device index) is already bound on the host",
        patterns=(
            Pattern(
                r"Mooncake KVCacheSendingThread (?:exception: |encountered exception\. .*Error: )"
                r"Address already in use"
            ),
            Pattern(r"ZMQError: Address already in use \(addr='tcp://", near=_MOONCAKE_NEAR),
        ),
        codes=(),
        cause="each P/D worker binds a ZMQ handshake socket on kv_port + its device index, so an instance "
        "holds kv_port .. kv_port + NPUs. Mooncake's AscendDirectTransport picks random ports in [20000, "
        "20000 + NPUs per node x 1000), and a kv_port in that range collides now and then (the report's "
        "handshake ports were 20012 and 20013); so does a second P/D instance on the same host whose "
        "kv_port range overlaps. It shows intermittently at startup.",
        fix="set kv_port >= 28000 on 8-NPU servers and >= 36000 on 16-NPU (A3) servers, and give every "
        "instance on one host a kv_port range (kv_port .. kv_port + NPUs) of its own, e.g. 36000, 36100, "
        "36200 as the CI configuration does.",
        preflight=Preflight.yes,
        sources=(*va(8938), TUTORIAL, CI_PD, CONNECTOR),
        example="Mooncake KVCacheSendingThread exception: Address already in use "
        "(addr='tcp://10.235.53.16:20012')",
        detail=r"addr='tcp://(?P<host>[^']+):(?P<port>\d+)'",
        hint="handshake port {port} on {host} was taken: move kv_port out of 20000 + NPUs x 1000 (>= 28000 "
        "on 8-NPU, >= 36000 on 16-NPU servers) and apart from the other instances' kv_port ranges",
        inferred="vllm-ascend 8938 was a 1P2D + KV pool start on one host; its maintainer named another "
        "process holding the port, the AscendDirectTransport range is the tutorial's explanation.",
    ),
    Rule(
        id="pd-prefill-tp-below-decode-tp",
        area="PD disaggregation",
        title="the prefill instances' TP size is smaller than the decode instances' (Mooncake connector)",
        patterns=p(
            r"prefill_tp_size: \d+ must be greater than or equal to the decode_tp_size: \d+",
            r"Mamba prefill TP size must be (?:>= decode TP size|divisible by decode TP size)",
            r"Hybrid Mamba prefill tp size\(\d+\) must be divisible by decode tp size\(\d+\)",
        ),
        codes=(),
        cause="the Mooncake connector reads kv_connector_extra_config.prefill.tp_size and decode.tp_size "
        "and refuses a prefill TP smaller than the decode TP: decode ranks pull KV from one or more prefill "
        "ranks, never the other way round. For unequal TP only P_tp > D_tp with P_tp % D_tp == 0 is "
        "supported.",
        fix="give the prefill pool a TP size >= the decode pool's and a multiple of it (e.g. prefill DP2 x "
        "TP8, decode DP32 x TP1), and make prefill/decode tp_size in kv_connector_extra_config match what "
        "each pool really runs, identically on every P and D instance.",
        preflight=Preflight.yes,
        sources=(CONNECTOR, HYBRID, DESIGN, CI_PD),
        example_from_code=True,
        example="ValueError: prefill_tp_size: 2 must be greater than or equal to the decode_tp_size: 4",
        detail=r"prefill_tp_size: (?P<prefill_tp>\d+) must be greater than or equal to the "
        r"decode_tp_size: (?P<decode_tp>\d+)",
        hint="prefill tp_size {prefill_tp} < decode tp_size {decode_tp} in kv_connector_extra_config",
    ),
    Rule(
        id="pd-engine-id-conflict",
        area="PD disaggregation",
        title="a prefill and a decode instance were started with the same engine_id",
        patterns=p(r"Conflict engine id \S+ with local engine id \S+"),
        codes=(),
        cause="when a decode worker first handshakes with a prefill worker, the Mooncake connector asserts "
        "that the remote engine_id differs from its own: the prefill and decode instances were started "
        "with the same engine_id in --kv-transfer-config (the old LLMDataDist README gives every node "
        "engine_id 0).",
        fix="give each prefill DP group its own engine_id and the decode instances another one (the CI "
        "configuration uses 0 and 1 for two prefill groups and 2 for all decode instances).",
        preflight=Preflight.yes,
        sources=(CONNECTOR, HYBRID, TUTORIAL, CI_PD),
        example_from_code=True,
        example="AssertionError: Conflict engine id 0 with local engine id 0.",
        detail=r"Conflict engine id (?P<engine_id>\S+) with local",
        hint="prefill and decode both use engine_id {engine_id}",
    ),
    Rule(
        id="pd-extra-config-missing-sizes",
        area="PD disaggregation",
        title="kv_connector_extra_config lacks the prefill/decode tp_size and dp_size",
        patterns=p(
            r"""assert ["'](?:tp|dp)_size["'] in (?:prefill|decode)_parallel_config""",
            r"decode pp size must be 1",
        ),
        codes=(),
        cause="the Mooncake connector worker asserts that kv_connector_extra_config has prefill.tp_size, "
        "prefill.dp_size, decode.tp_size and decode.dp_size (and decode pp_size 1); the assertion has no "
        "message, so the log shows the assert line of the traceback and a bare AssertionError.",
        fix='add "kv_connector_extra_config": {"prefill": {"dp_size": P_DP, "tp_size": P_TP}, "decode": '
        '{"dp_size": D_DP, "tp_size": D_TP}} with the pools\' real sizes to --kv-transfer-config on every '
        "prefill and decode instance.",
        preflight=Preflight.yes,
        sources=(CONNECTOR, HYBRID, TUTORIAL, CI_PD),
        example_from_code=True,
        example='assert "tp_size" in prefill_parallel_config',
        detail=r"""assert ["'](?P<key>(?:tp|dp)_size)["'] in (?P<pool>prefill|decode)_parallel_config""",
        hint="kv_connector_extra_config.{pool}.{key} is missing",
    ),
    Rule(
        id="pd-recompute-scheduler-not-decode",
        area="PD disaggregation",
        title="recompute_scheduler_enable is set on an instance that is not a PD decode instance",
        patterns=p(r"recompute_scheduler_enable can only be enabled (?:on PD-disaggregated D nodes|in PD-)"),
        codes=(),
        cause="vllm-ascend refuses additional_config recompute_scheduler_enable in PD-mixed mode (no "
        "kv_transfer_config, or a kv_role other than kv_consumer); on prefill instances (kv_producer) it is "
        "only ignored with a warning.",
        fix="set recompute_scheduler_enable only in the --additional-config of decode instances "
        "(kv_role kv_consumer) and remove it from mixed (non-disaggregated) replicas.",
        preflight=Preflight.yes,
        sources=(PLATFORM, va_at("v0.18.0", "vllm_ascend/platform.py"), *vap(8373)),
        example_from_code=True,
        example="ValueError: recompute_scheduler_enable can only be enabled on PD-disaggregated D nodes "
        "(kv_role='kv_consumer', but got kv_role=None), and is not supported in PD-mixed mode.",
        detail=r"got kv_role=(?P<kv_role>[^)]+)\)",
        hint="this instance has kv_role={kv_role}",
    ),
    Rule(
        id="pd-finegrained-tp-needs-recompute",
        area="PD disaggregation",
        title="oproj/embedding fine-grained TP is set without recompute_scheduler_enable",
        patterns=p(
            r"oproj_tensor_parallel_size / embedding_tensor_parallel_size require recompute_scheduler"
        ),
        codes=(),
        cause="finegrained_tp_config.oproj_tensor_parallel_size and embedding_tensor_parallel_size run "
        "cross-DP HCCL collectives that need the same num_tokens on every DP rank, which only the recompute "
        "scheduler guarantees; and the recompute scheduler is allowed on PD decode instances only.",
        fix="use oproj/embedding fine-grained TP only on PD decode instances (kv_role kv_consumer), together "
        'with "recompute_scheduler_enable": true in their --additional-config; remove them from prefill and '
        "mixed replicas.",
        preflight=Preflight.yes,
        sources=(ASCEND_CONFIG, PLATFORM),
        example_from_code=True,
        example="AssertionError: oproj_tensor_parallel_size / embedding_tensor_parallel_size require "
        "recompute_scheduler_enable=true: their cross-DP HCCL collectives need uniform num_tokens across DP "
        "ranks, which is only guaranteed when the recompute scheduler is enabled.",
        related=("pd-recompute-scheduler-not-decode",),
    ),
    Rule(
        id="pd-reduce-sample-on-prefill",
        area="PD disaggregation",
        title="enable_reduce_sample is set on a PD prefill instance",
        patterns=p(r"enable_reduce_sample is not supported on PD-disaggregated scenarios"),
        codes=(),
        cause="vllm-ascend refuses additional_config enable_reduce_sample (an experimental sampling "
        "optimisation) on prefill instances (kv_role kv_producer).",
        fix="remove enable_reduce_sample from the prefill instances' --additional-config.",
        preflight=Preflight.yes,
        sources=(ASCEND_CONFIG,),
        example_from_code=True,
        example="ValueError: enable_reduce_sample is not supported on PD-disaggregated scenarios. Please "
        "disable enable_reduce_sample.",
    ),
    Rule(
        id="pd-connector-removed-or-moved",
        area="PD disaggregation",
        title="--kv-transfer-config names a removed connector or an old module path",
        patterns=p(
            r"No module named 'vllm_ascend\.distributed\.(?!kv_transfer\b)[\w.]*"
            r"(?:connector|llmdatadist)[\w.]*'",
            r"Unsupported connector type: LLMDataDist\w*",
        ),
        codes=(),
        cause="the LLMDataDist connectors were removed in vllm-ascend v0.12.0rc1, and since v0.14.0rc1 the "
        "Mooncake connectors live in vllm_ascend.distributed.kv_transfer.kv_p2p, so an older guide's "
        "kv_connector_module_path (vllm_ascend.distributed.mooncake_connector, "
        "...llmdatadist_c_mgr_connector) no longer imports; without a module path vLLM knows only the "
        "connectors registered with it.",
        fix='use "kv_connector": "MooncakeConnectorV1" (or MooncakeLayerwiseConnector) and drop '
        "kv_connector_module_path or set it to "
        "vllm_ascend.distributed.kv_transfer.kv_p2p.mooncake_connector; LLMDataDist rank tables and env "
        "vars are no longer needed.",
        preflight=Preflight.yes,
        sources=(RELEASE_NOTES, va_at(PIN, "vllm_ascend/distributed/kv_transfer/__init__.py"), VLLM_FACTORY),
        example_from_code=True,
        example="Unsupported connector type: LLMDataDistCMgrConnector",
        detail=r"No module named '(?P<module>[\w.]+)'|Unsupported connector type: (?P<connector>\w+)",
        inferred="the moved module path is read from the releases' file trees (git ls-tree v0.13.0 and "
        "v0.14.0rc1), not from a report.",
    ),
    Rule(
        id="pd-mooncake-not-installed",
        area="PD disaggregation",
        title="the Mooncake transfer engine is not installed in the Python environment vLLM runs in",
        patterns=(
            *p(r"Please install mooncake by following the instructions at"),
            Pattern(r"No module named 'mooncake(?:\.\w+)?'"),
        ),
        codes=(),
        cause="the Mooncake connector imports mooncake.engine.TransferEngine when its worker starts; the "
        "package (mooncake-transfer-engine-npu, or a source build of Mooncake) is missing from the "
        "environment or image.",
        fix="use the official vllm-ascend image (it ships Mooncake since v0.11.0rc3), or pip install "
        "mooncake-transfer-engine-npu==0.3.11.post1 (glibc >= 2.35), or build Mooncake with "
        "-DUSE_ASCEND_DIRECT=ON as the PD tutorial shows.",
        preflight=Preflight.yes,
        sources=(TRANSFER_ENGINE, RELEASE_NOTES, KV_POOL, TUTORIAL, CPYTHON_IMPORT),
        example_from_code=True,
        example="Please install mooncake by following the instructions at "
        "https://github.com/kvcache-ai/Mooncake/blob/main/doc/en/build.md "
        "to run vLLM with MooncakeConnector.",
        related=("kv-connector-library-not-found",),
    ),
    Rule(
        id="pd-mooncake-built-without-ascend",
        area="PD disaggregation",
        title="Mooncake was built without its Ascend transport (USE_ASCEND_DIRECT off)",
        patterns=p(r"Unsupported transport ascend, please rebuild Mooncake"),
        codes=(),
        cause="vllm-ascend starts Mooncake's TransferEngine with the protocol 'ascend'; a Mooncake built "
        "without -DUSE_ASCEND_DIRECT=ON (e.g. the generic CUDA/TCP wheel) has no such transport, so the "
        "engine does not initialise. Only the KV pool's configurable protocol can fall back to TCP.",
        fix="install mooncake-transfer-engine-npu or rebuild Mooncake with cmake -DUSE_ASCEND_DIRECT=ON "
        "(CANN >= 8.3.RC1), or use the official vllm-ascend image.",
        preflight=Preflight.partly,
        sources=(MULTI_TRANSPORT, TRANSFER_ENGINE, *va(5299), TUTORIAL),
        example_from_code=True,
        example="Unsupported transport ascend, please rebuild Mooncake",
        inferred="that the generic wheel lacks the Ascend transport is read from Mooncake's build options; "
        "vllm-ascend 5299's TCP fallback applies where the protocol is configurable (the KV pool).",
        related=("pd-transfer-engine-init-failed",),
    ),
)
