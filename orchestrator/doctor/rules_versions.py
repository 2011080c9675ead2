"""Rules: CANN / torch_npu / driver pairing and the wrong image for the chip; HBM and KV-cache sizing.

Each rule cites the public reports its log line and fix were read from (research notes R15-R21)."""

from __future__ import annotations

from orchestrator.doctor.rule import Preflight, Rule, p
from orchestrator.doctor.sources import FAQ, VERSIONS, va, va_file, vap

VERSION_RULES = (
    Rule(
        id="cann-platform-init-failed",
        area="CANN versions",
        title="CANN could not initialise its platform info (500001 at set_device)",
        patterns=p(
            r"init runtime platform info failed, SocVersion = [A-Za-z0-9_]+",
            r"AclSetCompileopt\(aclCompileOpt::ACL_PRECISION_MODE.*error code is 500001",
        ),
        codes=("500001", "EH9999"),
        cause="CANN's graph engine failed to start; the precision-mode line above it is a consequence. "
        "Causes seen: CANN platform_config not found (a partial mount), numpy>=2 with CANN 8.2.x, an image "
        "whose CANN differs from the documented one, dependency packages missing (the plog names them).",
        fix="read the plog (/root/ascend/log/debug/plog/), pin numpy<2 on CANN 8.2.x (pip install "
        "'numpy<2'), and use the CANN version of vllm-ascend's compatibility matrix.",
        preflight=Preflight.yes,
        sources=(
            *va(692, 564, 302, 975, 2244, 2210, 6336),
            "https://github.com/PaddlePaddle/PaddleCustomDevice/issues/1214",
            VERSIONS,
        ),
        example="EH9999: [PID: 1439] 2025-04-28-02:50:24.965.356 [Init][PlatformInfo]init runtime platform "
        "info failed, SocVersion = Ascend910B2[FUNC:ReportInnerError][FILE:log_inner.cpp][LINE:145]",
        detail=r"SocVersion = (?P<soc>[A-Za-z0-9_]+)",
        hint="CANN failed for chip {soc}",
    ),
    Rule(
        id="image-soc-mismatch",
        area="CANN versions",
        title="the image or wheel was built for another chip (SoC version)",
        patterns=p(
            r"socversion \S+ of bin package does not match the current device socverison",
            r"Can not support soc_version",
            r"Unsupported soc[_ ]version",
            r"Cannot find option named 'Ascend",
        ),
        codes=(),
        cause="the image or torch_npu was built for another SoC (A2 910B, A3, 310P, 950) or is too old for "
        "the chip.",
        fix="use the image tag for the chip (…-310p for Atlas 300I Duo, …-a3 for A3; the installation guide "
        "has a separate 310P docker run), or a torch_npu new enough for the SoC.",
        preflight=Preflight.yes,
        sources=(*va(2725, 6676, 6796, 2795, 8186), "https://github.com/RLinf/RLinf/pull/1577"),
        example="[ERROR] the socversion Ascend910B1 of bin package does not match the current device "
        "socverison Ascend310P3. Please modify default socversion in run.sh or execute run.sh with "
        "socversion parameter.",
    ),
    Rule(
        id="opp-kernels-not-installed",
        area="CANN versions",
        title="the CANN kernels (binary operators) package is not installed: EZ1001",
        patterns=p(
            r"Get path and read binary_info_config\.json failed",
            r"please check if the opp_kernel package is instal",
        ),
        codes=("EZ1001",),
        cause="the Ascend-cann-kernels-<soc> package with the precompiled operators is missing.",
        fix="install the kernels package matching the chip and CANN (Ascend-cann-kernels-910b, "
        "Ascend-cann-kernels-310p, …).",
        preflight=Preflight.yes,
        sources=(*va(237), FAQ),
        example="RuntimeError: call aclnnSwiGlu failed, detail:EZ1001: [PID: 72153] "
        "2025-03-04-15:41:40.695.851 Get path and read binary_info_config.json failed, please check if the "
        "opp_kernel package is instal…",
    ),
    Rule(
        id="aclnn-op-missing-cann-too-old",
        area="CANN versions",
        title="an aclnn operator vllm-ascend calls is not installed (CANN too old, or vllm-ascend's own op "
        "missing)",
        patterns=p(
            r"'?aclnn\w+ or \w+GetWorkspaceSize not in libopapi\.so",
            r"call aclnn\w+ failed, error code is 561103",
        ),
        codes=("561103",),
        cause="the operator is looked up in CANN's libopapi.so and in vllm-ascend's custom operator package: "
        "the installed CANN is older than the vllm-ascend/torch_npu release requires, CANN and driver do not "
        "match (561103), or the operator is one vllm-ascend builds itself (e.g. LightningIndexer for "
        "DeepSeek-V3.2) and the installed vllm-ascend build lacks it.",
        fix="install the CANN version of vllm-ascend's compatibility matrix for this release; for an "
        "operator vllm-ascend ships itself use a release or image that builds it (vllm-ascend 5056 was fixed "
        "by PR 5082).",
        preflight=Preflight.yes,
        sources=(*va(7095, 4859, 5056), *vap(5082), VERSIONS),
        example="'aclnnAddRmsNormBias or aclnnAddRmsNormBiasGetWorkspaceSize not in libopapi.so, or "
        "libopapi.sonot found.', please check the stack trace above for the root cause",
        detail=r"(?P<op>aclnn\w+) or \w+GetWorkspaceSize not in libopapi",
        hint="missing operator: {op}",
        inferred="the 561103 diagnosis is a user's comment, not a maintainer's.",
    ),
    Rule(
        id="torch-npu-nnal-mismatch",
        area="CANN versions",
        title="torch_npu and the installed NNAL (ATB) / CANN do not match (undefined symbol)",
        patterns=p(
            r"(?:/torch_npu/|/nnal/)\S*\.so: undefined symbol",
            r"undefined symbol: _ZN\d+(?:atb|Mki)\d",
        ),
        codes=(),
        cause="torch_npu and its ATB operator plugin are built against one CANN/NNAL release and one C++ "
        "ABI; another NNAL (ATB) release, or the other ABI directory (nnal/atb/latest/atb/cxx_abi_0 or "
        "cxx_abi_1, chosen when nnal's set_env.sh is sourced), lacks the symbols they link to.",
        fix="install the CANN, NNAL and torch_npu versions vllm-ascend's compatibility matrix pairs (the "
        "official image ships a matching set); source /usr/local/Ascend/nnal/atb/set_env.sh after torch is "
        "installed (it picks the ABI from the installed torch) and check ATB_HOME_PATH.",
        preflight=Preflight.yes,
        sources=(
            *va(117),
            "https://github.com/Ascend/pytorch/issues/99",
            *va(1144),
            *vap(242),
            VERSIONS,
        ),
        example="ImportError: /usr/local/python3.10.14/lib/python3.10/site-packages/torch_npu/lib/"
        "libtorch_npu.so: undefined symbol: _ZN3atb15CreateOperationINS_5infer14GroupTopkParamEEEiRKT_PPNS_"
        "9OperationE",
        detail=r"(?P<library>[\w.-]+\.so): undefined symbol",
        hint="{library} does not find a symbol of the installed NNAL/CANN",
        inferred="which side is older is not in the line: vllm-ascend 117 needed a newer NNAL (GroupTopk, "
        "PR 242), vllm-ascend 1144 the other ABI directory.",
        related=("nnal-atb-missing", "cann-env-not-sourced"),
    ),
    Rule(
        id="driver-cann-incompatible",
        area="driver versions",
        title="the host driver (HDK) is older than the image's CANN needs",
        patterns=p(
            r"aclInit.*failed\s*:?\s*507008",
            r"runtime result = 507899",
            r"driver error:internal error",
        ),
        codes=("507008", "507899"),
        cause="the NPU driver and firmware on the host are older than the CANN in the image supports "
        "(reported for driver 24.1 with newer CANN).",
        fix="upgrade the driver and firmware (HDK) to the version the CANN release notes name, then reboot; "
        "or use an image whose CANN supports the installed driver.",
        preflight=Preflight.yes,
        sources=("https://github.com/PaddlePaddle/Paddle/issues/72458", *va(13399, 5468, 4972)),
        example="get device count failed, runtime result = 507899.",
        inferred="the reboot after the upgrade is not from these reports.",
    ),
)

MEMORY_RULES = (
    Rule(
        id="npu-memory-held-by-others",
        area="HBM",
        title="HBM was already in use when the engine started (free HBM below --gpu-memory-utilization)",
        patterns=p(
            r"Free memory on device(?: \S+)? \([\d.]+/[\d.]+ GiB\) on startup is less than desired GPU "
            r"memory utilization"
        ),
        codes=(),
        cause="vLLM claims gpu_memory_utilization x the NPU's HBM at start and first checks that much is "
        "free; another process on the same NPU (a second replica, a leftover vLLM, another framework) "
        "already holds the rest.",
        fix="free the NPU (`npu-smi info` lists the processes holding HBM; stop stale replicas) or place the "
        "replica on a free NPU; replicas that must share an NPU need --gpu-memory-utilization values that "
        "add up to less than 1.",
        preflight=Preflight.partly,
        sources=(*va(8621, 14628), va_file("vllm_ascend/worker/worker.py")),
        example="ValueError: Free memory on device (27.18/60.96 GiB) on startup is less than desired GPU "
        "memory utilization (0.9, 54.86 GiB). Decrease GPU memory utilization or reduce GPU memory used by "
        "other processes.",
        detail=r"Free memory on device(?: \S+)? \((?P<free>[\d.]+)/(?P<total>[\d.]+) GiB\) on startup is "
        r"less than desired GPU memory utilization \((?P<util>[\d.]+), (?P<wanted>[\d.]+) GiB\)",
        hint="{free} of {total} GiB was free at start; --gpu-memory-utilization {util} wanted {wanted} GiB",
        related=("npu-oom", "kv-cache-no-memory"),
    ),
    Rule(
        id="npu-oom",
        area="HBM",
        title="NPU out of memory (HBM held by other processes, or the model does not fit)",
        patterns=p(r"NPU out of memory\. Tried to allocate"),
        codes=(),
        cause="HBM ran out: when 'already allocated' is far below the total, another process (a second vLLM "
        "on the same NPU) holds it; otherwise the model and cache do not fit at this TP.",
        fix="free the NPU (npu-smi info shows who holds HBM), lower --max-model-len or "
        "--gpu-memory-utilization, raise tensor parallelism, and export "
        "PYTORCH_NPU_ALLOC_CONF=expandable_segments:True (vllm-ascend FAQ 12).",
        preflight=Preflight.partly,
        sources=(*va(19, 1987, 8809), FAQ),
        example="RuntimeError: NPU out of memory. Tried to allocate 22.00 MiB (NPU 6; 60.97 GiB total "
        "capacity; 10.24 GiB already allocated; 10.24 GiB current active; 19.79 MiB free; 10.65 GiB reserved "
        "in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to "
        "avoid fragmentation.",
        detail=r"\(NPU (?P<npu>\d+); (?P<total>[\d.]+) GiB total capacity; (?P<allocated>[\d.]+) GiB already "
        r"allocated;.*?(?P<free>[\d.]+ [KMG]iB) free",
        hint="NPU {npu}: {allocated} GiB of {total} GiB allocated by this process, {free} free; if that gap "
        "is large another process holds the HBM",
    ),
    Rule(
        id="kv-cache-no-memory",
        area="HBM",
        title="no HBM left for the KV cache after loading the weights",
        patterns=p(r"No available memory for the cache blocks"),
        codes=(),
        cause="weights plus graphs and workspace leave no HBM for the KV cache at the given "
        "--gpu-memory-utilization.",
        fix="raise --gpu-memory-utilization (if the HBM is free), raise TP/PP, use a quantized model, or "
        "lower --max-model-len (vllm-ascend FAQ 12).",
        preflight=Preflight.partly,
        sources=(*va(2636, 9099, 436), FAQ),
        example="ValueError: No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine.",
    ),
)
