"""Serving knobs that vLLM's own parser would reject, found before any host is touched."""

from __future__ import annotations

import re
from collections.abc import Iterator

from orchestrator.catalog import KNOWN_SERVE_FLAGS, REMOVED_SERVE_FLAGS, canonical_flag, suggest_flag
from orchestrator.planning.serve_args import DERIVED_ENV, DERIVED_FLAGS
from orchestrator.spec.common import SECRET_NAME
from orchestrator.spec.findings import Finding, error, warning
from orchestrator.spec.site import SiteSpec

_NUMBER = re.compile(r"^-?[0-9][0-9.e+-]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_REF = re.compile(r"^(env:[A-Za-z_][A-Za-z0-9_]*|file:\S.*)$")
_NOT_REAL_ENV = {
    "ASCEND_GLOBAL_VISIBILITY": "is not an Ascend variable; device visibility is ASCEND_RT_VISIBLE_DEVICES, "
    "which the plan derives from the replica's devices",
}


def check(spec: SiteSpec) -> Iterator[Finding]:
    s = spec.serving
    for i, arg in enumerate(s.extra_args):
        if not arg.startswith("-") or _NUMBER.match(arg):
            continue
        given = arg.split("=", 1)[0]
        flag = canonical_flag(given)
        path = ("serving", "extra_args", i)
        if SECRET_NAME.search(flag) and flag != "--api-key":
            yield error(
                path,
                f"{given} carries a secret, and extra_args are rendered into the inventory in plain text",
                "remove it and pass the secret as a reference in serving.env (e.g. HF_TOKEN: env:HF_TOKEN)",
                "secret",
            )
        elif flag in REMOVED_SERVE_FLAGS:
            yield error(
                path, f"{flag}: {REMOVED_SERVE_FLAGS[flag]}", f"remove {flag} from extra_args", "vllm-args"
            )
        elif flag in DERIVED_FLAGS:
            yield error(
                path,
                f"{flag} is rendered from the spec; setting it here would contradict the plan",
                f"remove it and set the matching serving/model field instead ({_field_for(flag)})",
                "vllm-args",
            )
        elif flag not in KNOWN_SERVE_FLAGS:
            close = suggest_flag(flag)
            hint = f"did you mean {close}? " if close else ""
            msg = f"{flag} is not a `vllm serve` flag that vLLM's parser accepts"
            if s.allow_unknown_args:
                yield warning(
                    path, msg + " (allowed by serving.allow_unknown_args)", hint or None, "vllm-args"
                )
            else:
                yield error(
                    path,
                    msg,
                    f"{hint}or set serving.allow_unknown_args: true if your vLLM build has it",
                    "vllm-args",
                )
    for key, value in s.env.items():
        epath = ("serving", "env", key)
        if not _ENV_NAME.match(key):
            yield error(
                epath, f"'{key}' is not a valid environment variable name", "use letters, digits, '_'", "env"
            )
        elif key in _NOT_REAL_ENV:
            yield error(epath, f"{key} {_NOT_REAL_ENV[key]}", f"remove {key}", "env")
        elif key in DERIVED_ENV:
            yield error(
                epath,
                f"{key} is derived by the plan (devices, HCCL settings, API key)",
                "remove it; set the matching field (serving.hccl, replica devices, serving.api_key)",
                "env",
            )
        elif SECRET_NAME.search(key) and not _REF.match(value):
            yield error(
                epath,
                f"{key} looks like a secret and its value is inline",
                f"write '{key}: env:NAME' or 'file:PATH'; the value is resolved on the controller at run "
                "time and never rendered",
                "secret",
            )
    if s.max_num_batched_tokens is not None and s.max_num_batched_tokens < s.max_num_seqs:
        yield error(
            ("serving", "max_num_batched_tokens"),
            f"max_num_batched_tokens {s.max_num_batched_tokens} "
            f"is below max_num_seqs {s.max_num_seqs}; vLLM refuses to start",
            f"raise it to at least {s.max_num_seqs}",
            "vllm-args",
        )
    if s.gpu_memory_utilization > 0.95:
        yield warning(
            ("serving", "gpu_memory_utilization"),
            f"{s.gpu_memory_utilization:g} leaves little room for HCCL buffers and graph capture on Ascend",
            "0.9-0.92 is the usual range",
            "capacity",
        )


def _field_for(flag: str) -> str:
    table = {
        "--tensor-parallel-size": "serving.parallelism.tp",
        "--pipeline-parallel-size": "serving.parallelism.pp",
        "--data-parallel-size": "serving.parallelism.dp",
        "--enable-expert-parallel": "serving.parallelism.ep",
        "--max-model-len": "serving.max_model_len",
        "--max-num-seqs": "serving.max_num_seqs",
        "--gpu-memory-utilization": "serving.gpu_memory_utilization",
        "--quantization": "model.quantization",
        "--dtype": "model.dtype",
        "--port": "serving.port",
        "--api-key": "serving.api_key",
        "--served-model-name": "model.served_name",
        "--trust-remote-code": "model.trust_remote_code",
        "--max-num-batched-tokens": "serving.max_num_batched_tokens",
        "--enforce-eager": "serving.enforce_eager",
        "--kv-cache-dtype": "serving.kv_cache_dtype",
    }
    return table.get(flag, "derived from the replica layout")
