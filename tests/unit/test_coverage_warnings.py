"""validate says what a valid spec leaves unverified or unmonitored: staged weights without a manifest
sha256 (only config.json is looked for) and monitoring without an npu-exporter package (no NPU metrics)."""

from __future__ import annotations

from typing import Any

from orchestrator.validation.coverage import coverage_warnings
from tests.helpers import load_example, validate_data

SHA = "ab" * 32


def warnings_of(data: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    result = validate_data(data)
    assert result.ok and result.spec is not None, result.errors
    return [(f.path, f.code) for f in coverage_warnings(result.spec)]


def test_staged_weights_without_a_manifest_and_no_npu_exporter_are_said() -> None:
    data = load_example("a2-single-distill")
    assert "manifest_sha256" not in data["model"].get("source", {})
    assert warnings_of(data) == [
        (("model", "source", "manifest_sha256"), "unverified"),
        (("monitoring", "npu_exporter"), "unmonitored"),
    ]
    result = validate_data(data)
    assert result.spec is not None
    weights, npu = coverage_warnings(result.spec)
    assert weights.message.startswith("the weights in /data/models/DeepSeek-R1-Distill-Qwen-32B are not")
    assert npu.message.startswith("Prometheus gets no NPU metrics") and "npu-exporter" in (npu.fix or "")


def test_a_manifest_and_an_exporter_silence_them() -> None:
    data = load_example("a2-single-distill")
    data["model"].setdefault("source", {})["manifest_sha256"] = SHA
    data.setdefault("monitoring", {})["npu_exporter"] = {
        "version": "7.1.0",
        "url": "https://mirror.example.com/Ascend-mindxdl-npu-exporter_7.1.0_linux-aarch64.zip",
        "sha256": SHA,
    }
    assert warnings_of(data) == []
    data["monitoring"] = {"enabled": False}  # no monitoring: nothing to miss
    del data["model"]["source"]["manifest_sha256"]
    assert warnings_of(data) == [(("model", "source", "manifest_sha256"), "unverified")]
