"""Serving knobs that vLLM's own parser would reject, found before any host is touched."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from orchestrator.planning.serve_args import DERIVED_ENV
from orchestrator.spec.common import SECRET_NAME
from orchestrator.spec.findings import Finding, SpecPath, error, warning
from orchestrator.spec.site import SiteSpec
from orchestrator.validation import ascend_config, extra_args

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_REF = re.compile(r"^(env:[A-Za-z_][A-Za-z0-9_]*|file:\S.*)$")
_NOT_REAL_ENV = {
    "ASCEND_GLOBAL_VISIBILITY": "is not an Ascend variable; device visibility is ASCEND_RT_VISIBLE_DEVICES, "
    "which the plan derives from the replica's devices",
}


def check(spec: SiteSpec) -> Iterator[Finding]:
    s = spec.serving
    yield from extra_args.check(spec)
    yield from ascend_config.check(spec)
    yield from check_env(s.env, ("serving", "env"))
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


def check_env(
    env: Mapping[str, str], base: SpecPath, derived: Mapping[str, str] | None = None
) -> Iterator[Finding]:
    """One env map at `base` (serving.env, a PD pool's env); `derived` names more variables the plan sets
    there, each with the spec field to set instead."""
    for key, value in env.items():
        epath = (*base, key)
        if derived and key in derived:
            yield error(
                epath,
                f"{key} is set by the plan from {derived[key]}",
                f"remove {key}; set {derived[key]}",
                "env",
            )
        elif not _ENV_NAME.match(key):
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
        elif _REF.match(value):
            yield error(
                epath,
                f"{key}: {value} would reach the container as that literal text: serving.env values are "
                "passed as written, secret references are resolved only in serving.api_key and "
                "image.registry.password",
                f"remove {key}; the weights phase stages the model on every server, so vLLM needs no hub "
                "token at run time",
                "secret",
            )
        elif SECRET_NAME.search(key):
            yield error(
                epath,
                f"{key} looks like a secret and its value is inline; serving.env is rendered into the "
                "inventory in plain text and cannot carry secrets",
                f"remove {key}; the weights phase stages the model on every server, so vLLM needs no hub "
                "token at run time",
                "secret",
            )
