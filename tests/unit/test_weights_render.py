"""What orchestrator render hands role model_weights (group_vars/all.yml), from the example site with a
controller source (inventories/a2-fleet-gateway) and variants of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from orchestrator.pipeline import validate_text
from orchestrator.render import render_texts

SITE = Path(__file__).resolve().parents[2] / "inventories" / "a2-fleet-gateway" / "site.yaml"


def all_vars(source: dict[str, Any]) -> dict[str, Any]:
    spec = yaml.safe_load(SITE.read_text(encoding="utf-8"))
    spec["model"]["source"] = source
    result = validate_text(yaml.safe_dump(spec, sort_keys=False))
    assert result.ok, [f.message for f in result.errors]
    data: dict[str, Any] = yaml.safe_load(render_texts(result)["group_vars/all.yml"])
    return data


def test_controller_source_defaults() -> None:
    v = all_vars({"type": "controller", "location": "/srv/models/m", "manifest_sha256": "a" * 64})
    assert v["model_weights_manifest_file"] == "/srv/models/m/weights.manifest.json"
    assert v["model_weights_manifest_sha256"] == "a" * 64
    assert (v["model_weights_repair"], v["model_weights_bwlimit_kib"], v["model_weights_seeds"]) == (
        True,
        0,
        1,
    )
    assert v["model_weights_rsync_port"] == 8873


def test_bwlimit_port_seeds_repair_and_manifest_override() -> None:
    v = all_vars(
        {
            "type": "controller",
            "location": "/srv/models/m",
            "manifest": "/srv/manifests/m.json",
            "manifest_sha256": "b" * 64,
            "bwlimit_mib_s": 2.5,
            "port": 9873,
            "seeds": 2,
            "repair": False,
        }
    )
    assert v["model_weights_manifest_file"] == "/srv/manifests/m.json"
    assert v["model_weights_bwlimit_kib"] == 2560  # rsync --bwlimit takes KiB/s
    assert (v["model_weights_rsync_port"], v["model_weights_seeds"], v["model_weights_repair"]) == (
        9873,
        2,
        False,
    )


def test_staged_reads_the_manifest_on_each_server() -> None:
    v = all_vars({"type": "staged", "manifest_sha256": "c" * 64})
    assert v["model_weights_manifest_file"] is None and v["model_weights_source"] == "staged"
