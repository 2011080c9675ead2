"""The weights phase's variables (role model_weights, group_vars/all.yml): the model, where its weights come
from and go, where the manifest is read, repair, the copy's bandwidth cap, how many servers the controller
seeds, and the port of the seeding servers' rsync daemon."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from orchestrator.spec.site import SiteSpec

MANIFEST_NAME = "weights.manifest.json"  # orchestrator.weights.manifest.MANIFEST_NAME
URL_CACHE = "~/.cache/ascend-orchestrator/weights"


def _manifest_file(spec: SiteSpec) -> str | None:
    """The manifest on the controller; None: on each server (staged weights)."""
    src = spec.model.source
    if src.manifest:
        return src.manifest
    if src.type == "controller" and src.location:
        return str(PurePosixPath(src.location) / MANIFEST_NAME)
    if src.type == "url":
        return f"{URL_CACHE}/{PurePosixPath(spec.model.weights_path).name}/{MANIFEST_NAME}"
    return None


def weights_vars(spec: SiteSpec) -> dict[str, Any]:
    src = spec.model.source
    bw = src.bwlimit_mib_s
    return {
        "model_weights_path": spec.model.weights_path,
        "model_weights_source": src.type,
        "model_weights_location": src.location,
        "model_weights_manifest_sha256": src.manifest_sha256,
        "model_weights_manifest_file": _manifest_file(spec),
        "model_weights_repair": src.repair,
        "model_weights_bwlimit_kib": round(bw * 1024) if bw else 0,
        "model_weights_seeds": src.seeds,
        "model_weights_rsync_port": src.port,
        "model_weights_url_cache": f"{URL_CACHE}/{PurePosixPath(spec.model.weights_path).name}",
    }
