"""Image build, rollout policy, gateway, monitoring and drift."""

from __future__ import annotations

from collections.abc import Iterator

from orchestrator.planning.image import DERIVED_BUILD_ARGS
from orchestrator.planning.roles import hosts_with_role
from orchestrator.planning.rollout import parse_batch_size
from orchestrator.spec.drift_schedule import ScheduleError, parse_every
from orchestrator.spec.findings import Finding, error, warning
from orchestrator.spec.site import SiteSpec

# The monitoring roles install from the Debian / Ubuntu archive with apt (prometheus-node-exporter,
# prometheus, unzip for npu-exporter) and configure the packages' /etc/default files: only these OS qualify.
MONITORING_DISTROS = ("ubuntu", "debian")


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
    yield from _monitoring_os(spec)
    try:
        parse_every(spec.drift.schedule)
    except ScheduleError as exc:
        problem, _, fix = str(exc).partition(" Fix: ")
        yield error(("drift", "schedule"), problem.rstrip("."), fix.rstrip("."), "drift")
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
    if parse_batch_size(r.batch_size) is None and isinstance(r.batch_size, str):
        yield error(
            ("rollout", "batch_size"),
            f"batch_size '{r.batch_size}' is neither a number nor a percentage",
            "write e.g. 2 or '25%'",
            "rollout",
        )
    elif parse_batch_size(r.batch_size) is None:
        yield error(("rollout", "batch_size"), "batch_size must be at least 1", "write e.g. 1", "rollout")
    if spec.serving.disaggregation is not None or not n:
        return  # a PD site rolls out its pools, not replicas (no replicas at all: pd_rules reports it)
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


def _monitoring_os(spec: SiteSpec) -> Iterator[Finding]:
    """Monitoring (on by default) on an OS whose packages and paths the monitoring roles do not know: fail
    closed instead of an apt task failing on every server of an openEuler or Kylin site."""
    if not spec.monitoring.enabled or spec.os.distro in MONITORING_DISTROS:
        return
    written = "monitoring" in spec.model_fields_set and "enabled" in spec.monitoring.model_fields_set
    yield error(
        ("monitoring", "enabled") if written else ("os", "distro"),
        f"monitoring is on{'' if written else ' (the default)'} and the servers run {spec.os.distro} "
        f"{spec.os.version}: the monitoring roles install node_exporter, Prometheus and npu-exporter's unzip "
        "with apt from the Debian / Ubuntu archive and configure their /etc/default files, which "
        f"{spec.os.distro} does not have",
        "set monitoring: {enabled: false} (and scrape the servers from a Prometheus of your own), or run "
        "Ubuntu 20.04 / 22.04 servers",
        "monitoring",
    )
