"""What a valid spec leaves unchecked or unseen, said by `orchestrator validate` as warnings (and by
`orchestrator phases` in its lines): staged weights without model.source.manifest_sha256 are never
verified (only config.json is looked for), and monitoring without monitoring.npu_exporter collects no NPU
metrics (HBM, AI Core use, temperature, health). Both are legitimate choices, so they are not findings of
the spec's validation (examples and tests stay warning-free); validate prints them after it."""

from __future__ import annotations

from orchestrator.spec.findings import Finding, warning
from orchestrator.spec.site import SiteSpec


def coverage_warnings(spec: SiteSpec) -> list[Finding]:
    out: list[Finding] = []
    src = spec.model.source
    if not src.manifest_sha256:
        out.append(
            warning(
                ("model", "source", "manifest_sha256"),
                f"the weights in {spec.model.weights_path} are not verified: without a manifest the weights "
                "phase only checks that config.json is there, so a truncated or corrupted file is served",
                "run `orchestrator weights manifest DIR` on a good copy and set model.source.manifest_sha256 "
                "to the sha256 it prints",
                "unverified",
            )
        )
    if spec.monitoring.enabled and spec.monitoring.npu_exporter is None:
        out.append(
            warning(
                ("monitoring", "npu_exporter"),
                "Prometheus gets no NPU metrics (HBM, AI Core use, temperature, health): no npu-exporter "
                "package is named, so only node exporters are installed",
                "download MindCluster's npu-exporter zip "
                "(Ascend-mindxdl-npu-exporter_<ver>_linux-<arch>.zip) and name it in monitoring.npu_exporter "
                "(version, path or url, sha256)",
                "unmonitored",
            )
        )
    return out
