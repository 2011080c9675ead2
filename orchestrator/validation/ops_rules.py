"""Image build, rollout policy, gateway, monitoring and drift."""

from __future__ import annotations

import re
from collections.abc import Iterator

from orchestrator.planning.image import DERIVED_BUILD_ARGS
from orchestrator.planning.roles import hosts_with_role
from orchestrator.spec.findings import Finding, error, warning
from orchestrator.spec.site import SiteSpec

_CRON_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_CRON_NAMES = ("minute", "hour", "day of month", "month", "day of week")
_PERCENT = re.compile(r"^([1-9][0-9]?|100)%$")


def _cron_field_ok(text: str, low: int, high: int) -> bool:
    for part in text.split(","):
        body, _, step = part.partition("/")
        if step and (not step.isdigit() or int(step) == 0):
            return False
        if body == "*":
            continue
        lo, _, hi = body.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return False
        values = [int(lo)] + ([int(hi)] if hi else [])
        if any(v < low or v > high for v in values) or (hi and int(hi) < int(lo)):
            return False
    return True


def cron_problem(expr: str) -> str | None:
    fields = expr.split()
    if len(fields) != 5:
        return f"a cron expression has 5 fields (minute hour day month weekday); '{expr}' has {len(fields)}"
    for text, (low, high), name in zip(fields, _CRON_RANGES, _CRON_NAMES, strict=True):
        if not _cron_field_ok(text, low, high):
            return (
                f"cron field '{text}' ({name}) is not valid: use *, N, N-M, lists and /STEP in {low}-{high}"
            )
    return None


def check(spec: SiteSpec) -> Iterator[Finding]:
    for key in spec.image.build_args:
        if key in DERIVED_BUILD_ARGS:
            msg = f"build arg {key} is derived from the chip and the compatibility matrix"
            if spec.software.allow_unsupported:
                yield warning(
                    ("image", "build_args", key), msg + " (overridden: allow_unsupported)", None, "image"
                )
            else:
                yield error(
                    ("image", "build_args", key),
                    msg,
                    f"remove {key}; set software.vllm_ascend.version, image.base_os, image.base_image or "
                    "the profile's chip instead",
                    "image",
                )
    reg = spec.image.registry
    if reg is not None and reg.password is not None and reg.username is None:
        yield error(
            ("image", "registry", "username"),
            "a registry password without a username",
            "set image.registry.username",
            "image",
        )
    if spec.image.build_host is None and not hosts_with_role(spec, "build"):
        yield warning(
            ("image", "build_host"),
            "no server has role 'build'; the image is built on the first NPU server",
            "add 'build' to the roles of the server that should build",
            "image",
        )
    yield from _rollout(spec)
    if spec.monitoring.enabled and spec.monitoring.host is None and not hosts_with_role(spec, "monitoring"):
        yield warning(
            ("monitoring", "host"),
            "no server has role 'monitoring': exporters are installed on the NPU servers, but no Prometheus",
            "add 'monitoring' to the roles of a server",
            "monitoring",
        )
    problem = cron_problem(spec.drift.schedule)
    if problem:
        yield error(("drift", "schedule"), problem, "e.g. '0 */6 * * *' (every 6 hours)", "drift")
    for i, out in enumerate(spec.drift.outputs):
        if out.type == "file" and not out.path:
            yield error(("drift", "outputs", i, "path"), "a file output needs a path", "set path", "drift")
        if out.type == "webhook" and not out.url:
            yield error(
                ("drift", "outputs", i, "url"),
                "a webhook output needs a url reference",
                "set url: env:DRIFT_WEBHOOK_URL",
                "drift",
            )


def _rollout(spec: SiteSpec) -> Iterator[Finding]:
    r = spec.rollout
    n = len(spec.serving.replicas)
    if isinstance(r.batch_size, str):
        if not _PERCENT.match(r.batch_size):
            yield error(
                ("rollout", "batch_size"),
                f"batch_size '{r.batch_size}' is neither a number nor a percentage",
                "write e.g. 2 or '25%'",
                "rollout",
            )
    elif r.batch_size < 1:
        yield error(("rollout", "batch_size"), "batch_size must be at least 1", "write e.g. 1", "rollout")
    if r.canary > n:
        yield error(
            ("rollout", "canary"),
            f"canary {r.canary} exceeds the {n} replica(s)",
            f"use at most {n}",
            "rollout",
        )
    if r.min_available is not None and r.min_available >= n:
        yield error(
            ("rollout", "min_available"),
            f"min_available {r.min_available} leaves no replica to update ({n} replica(s))",
            f"use at most {n - 1}",
            "rollout",
        )
