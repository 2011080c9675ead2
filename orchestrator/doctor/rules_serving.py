"""Rules: /dev/shm, scheduler limits, AICore faults, operator compilation, the platform plugin, quantized
models and the KV connector's libraries.

Each rule cites the public reports its log line and fix were read from (research notes R32-R37)."""

from __future__ import annotations

from orchestrator.doctor.rule import Preflight, Rule, p
from orchestrator.doctor.sources import FAQ, va, va_file, vap

SERVING_RULES = (
    Rule(
        id="shm-too-small",
        area="/dev/shm",
        title="/dev/shm is too small (Docker's default is 64 MB)",
        patterns=p(
            r"memory available in /dev/shm",
            r"unable to write to file </torch_\d+_\d+(?:_\d+)?>: No space left on device",
        ),
        codes=(),
        cause="Ray's object store and torch's shared-memory tensors live in /dev/shm; Docker gives a "
        "container 64 MB unless told otherwise, and EngineCore can die under load.",
        fix="docker run --shm-size=1g (more with Ray or pipeline parallelism, at least the object store "
        "size, e.g. 16g) or --ipc=host; on Kubernetes an emptyDir with medium: Memory at /dev/shm.",
        preflight=Preflight.yes,
        sources=(
            "https://github.com/gpustack/gpustack/issues/5014",
            "https://github.com/logicalclocks/hopsworks/issues/1557",
            *vap(3519, 3645),
            FAQ,
        ),
        example="[2026-03-25 05:44:29,435 W 39 39] (raylet) store_runner.cc:83: System memory request "
        "exceeds memory available in /dev/shm. The request is for 10200547328 bytes, and the amount "
        "available is 9663676416 bytes.",
    ),
    Rule(
        id="ascend-scheduler-batched-tokens",
        area="scheduler",
        title="max_num_batched_tokens is smaller than max_model_len without chunked prefill",
        patterns=p(r"max_num_batched_tokens \(\d+\) is smaller than max_model_len \(\d+\)"),
        codes=(),
        cause="without chunked prefill a prompt must fit one batch, so vLLM refuses a max_model_len larger "
        "than max_num_batched_tokens.",
        fix="pass --max-num-batched-tokens >= --max-model-len, or enable chunked prefill / disable the "
        'Ascend scheduler (--additional-config \'{"ascend_scheduler_config":{"enabled":false}}\').',
        preflight=Preflight.yes,
        sources=(*vap(4365, 2434), "https://github.com/vllm-project/vllm/issues/28981"),
        example="Value error, max_num_batched_tokens (2048) is smaller than max_model_len (40960). This "
        "effectively limits …",
        detail=r"max_num_batched_tokens \((?P<batched>\d+)\) is smaller than max_model_len \((?P<len>\d+)\)",
        hint="--max-num-batched-tokens {batched} < --max-model-len {len}",
    ),
    Rule(
        id="aicore-vector-exception",
        area="AICore",
        title="a kernel faulted on the NPU (507035 / 507014 / vector core exception)",
        patterns=p(
            r"fault kernel_name=\S+",
            r"exception of fftsplus (?:aicore|aivector) error",
            r"errorStr: The DDR address of the MTE instruction is out of range",
            r"error code(?: is|:)\s*50703[45]",
            r"vector core exception",
            r"aicore timeout",
        ),
        codes=("507035", "507014", "507034"),
        cause="a device-side kernel failed (an operator bug, bad input, or an MoE buffer too small); the "
        "Python line is wherever the host synchronised next (e.g. sampled_token_ids.tolist()), not the "
        "faulty operator.",
        fix="report the kernel name; try --enforce-eager or disable the custom op or graph mode; upgrade "
        "vllm-ascend and CANN; ASCEND_LAUNCH_BLOCKING=1 localises the failing op; read the device plog.",
        preflight=Preflight.no,
        sources=va(5043, 1038, 2349, 6018, 16072, 6190, 2630),
        example="RuntimeError: ACL stream synchronize failed, error code:507035",
        detail=r"fault kernel_name=(?P<kernel>[^,]+)",
        hint="faulty kernel: {kernel}",
        generic=True,
        related=("hccl-buffsize-too-small",),
    ),
    Rule(
        id="op-compile-dir-not-writable",
        area="operator compilation",
        title="operator compilation cannot write kernel_meta / debug dirs in the working directory",
        patterns=p(
            r"Permission denied: '[^']*kernel_meta'",
            r"for \[ge\.debugDir\] is invalid",
            r"/kernel_meta/kernel_meta_",
        ),
        codes=(),
        cause="operator compilation writes kernel_meta and debug directories relative to the working "
        "directory (/, /usr/bin, /usr/include in the reports), which the service user cannot write.",
        fix="start vLLM from a writable working directory (docker run -w /workspace, WorkingDirectory= in "
        "systemd).",
        preflight=Preflight.yes,
        sources=(*va(433, 2748), "https://github.com/Ascend/pytorch/issues/61"),
        example="PermissionError: [Errno 13] Permission denied: '//kernel_meta'",
        inferred="cause and fix are read from the paths in the reports, not stated by them.",
    ),
    Rule(
        id="triton-compile-gxx-ice",
        area="compile cache",
        title="Triton's launcher build crashed g++ (internal compiler error) while compiling a kernel",
        patterns=p(
            r"Failed to compile \S+\.cxx, error: g\+\+: internal compiler error",
            r"g\+\+: internal compiler error: Segmentation fault signal terminated program cc1plus",
        ),
        codes=(),
        cause="triton-ascend builds a C++ launcher for each kernel it JIT-compiles; with the triton-ascend "
        "of some images g++ crashes on it in some containers, and what it left in the Triton cache "
        "(~/.triton/cache) keeps failing afterwards.",
        fix="use the triton-ascend version of vllm-ascend's requirements.txt for the release, then clear "
        "the Triton cache: `orchestrator heal SITE --purge-compile-cache --limit HOST` removes the server's "
        "compile caches (vLLM's and Triton's, mounted from /var/cache/ascend-orchestrator/compile) and "
        "restarts its replicas cold, through the gates.",
        preflight=Preflight.no,
        sources=(*va(7782), va_file("requirements.txt")),
        example="RuntimeError: Failed to compile /tmp/tmpx5kvific/launcher_cxx11abi1.cxx, error: g++: "
        "internal compiler error: Segmentation fault signal terminated program cc1plus",
        inferred="that the cache keeps failing without a purge is read from the report's advice to clear it "
        "after the upgrade, not shown in it.",
    ),
    Rule(
        id="platform-plugin-not-loaded",
        area="install",
        title="vLLM did not load the Ascend platform plugin",
        patterns=p(
            r"Failed to load plugin ascend",
            r"No platform detected, vLLM is running on UnspecifiedPlatform",
            r"Failed to infer device type",
        ),
        codes=(),
        cause="vllm-ascend is missing or does not match vllm, or torch_npu failed to import (then an earlier "
        "line names the missing library: driver-lib64-not-mounted, cann-env-not-sourced, nnal-atb-missing).",
        fix="install the vllm-ascend release made for the installed vllm (vllm-ascend FAQ 7) and check "
        "`python -c 'import torch_npu, vllm_ascend'` in the container.",
        preflight=Preflight.yes,
        sources=(*va(130, 540, 262), FAQ),
        example="ERROR 04-16 13:55:44 __init__.py:46] Failed to load plugin ascend",
        generic=True,
        related=("driver-lib64-not-mounted", "cann-env-not-sourced", "nnal-atb-missing"),
    ),
    Rule(
        id="modelslim-config-missing",
        area="quantization",
        title="--quantization ascend without a ModelSlim (W8A8) quantized model",
        patterns=p(
            r"ModelSlim Quantization Config Not Found",
            r"There is no available ascend quantizer",
            r"invalid choice: 'ascend'",
            r"Cannot find the config file for ascend",
        ),
        codes=(),
        cause="--quantization ascend needs the ModelSlim output (quant_model_description.json beside the "
        "weights); old releases lacked the method or needed mindie_turbo.",
        fix="point --model at the quantized directory with quant_model_description.json and "
        "quant_model_weight_*.safetensors, or drop --quantization ascend for float weights; use vllm-ascend "
        ">= 0.9.0rc2.",
        preflight=Preflight.yes,
        sources=(va_file("vllm_ascend/quantization/modelslim_config.py"), *va(633, 902), *vap(582)),
        example="NotImplementedError: There is no available ascend quantizer.",
    ),
    Rule(
        id="kv-connector-library-not-found",
        area="KV connector",
        title="the Mooncake connector's Ascend transport library is not on the loader path",
        patterns=p(r"\b(?:lib)?ascend_transport\w*\.so: cannot open shared object file"),
        codes=(),
        cause="Mooncake's Ascend transport (ascend_transport.so, installed under /usr/local/lib) is not "
        "found: /usr/local/lib is not on LD_LIBRARY_PATH in the process that starts vLLM, or Mooncake was "
        "not installed with its Ascend transport.",
        fix="export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/lib in the command that starts vLLM (the "
        "vllm-ascend Dockerfiles set it since PR 6955/6976); if the file is missing, install Mooncake built "
        "with USE_ASCEND_DIRECT=ON.",
        preflight=Preflight.yes,
        sources=(*va(6949), *vap(6955), *va(5299)),
        example="ImportError: ascend_transport.so: cannot open shared object file: No such file or directory",
        inferred="the USE_ASCEND_DIRECT build is from vllm-ascend 5299, not from the failing report.",
        related=("cann-env-not-sourced",),
    ),
)
