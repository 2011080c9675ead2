"""The preflight contract and the drivers-phase settings rendered from the spec (planning/preflight.py and
the _preflight_vars / _drivers_vars keys of render/inventory.py), against the example sites."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from orchestrator.planning.drivers import drivers_serial
from orchestrator.render import render_texts
from tests.helpers import ROOT, validate_data


def rendered(data: dict[str, Any]) -> dict[str, Any]:
    result = validate_data(data)
    assert result.ok, [str(f) for f in result.errors]
    return {k: yaml.safe_load(v) for k, v in render_texts(result).items() if k.endswith(".yml")}


def test_pair_site_contract(pair: dict[str, Any]) -> None:
    files = rendered(pair)
    assert files["group_vars/all.yml"]["preflight_os"] == {
        "distro": "openeuler",
        "version": "22.03",
        "kernel_line": "5.10",  # openEuler 22.03 LTS is Linux 5.10 (kernels.yaml [openeuler])
        "time_sync": "required",
    }
    head, worker, ops = (files[f"host_vars/{h}.yml"] for h in ("a2-01", "a2-02", "ops-01"))
    assert head["preflight_npu"] == {"chip": "910B3", "arch": "aarch64", "pci_vendor_id": "19e5",
                                     "pci_device_id": "d802", "pci_functions": 8}  # fmt: skip
    assert ops["preflight_npu"] is None
    weights = [d for d in worker["preflight_disk"] if d["path"] == "/data/models/DeepSeek-R1-W8A8"]
    # the plan says 640.9 GiB of weights (tests/golden/plans/a2-pair-r1-w8a8.txt) plus 5 % of side files
    assert weights == [{"path": "/data/models/DeepSeek-R1-W8A8",
                        "purpose": "model weights (DeepSeek-R1-W8A8)",
                        "min_free_gib": 673.0, "counts_existing": True}]  # fmt: skip
    images = {h: [d["min_free_gib"] for d in f["preflight_disk"] if d["path"] == "/var/lib/docker"]
              for h, f in (("head", head), ("worker", worker), ("ops", ops))}  # fmt: skip
    assert images == {"head": [80.0], "worker": [40.0], "ops": [10.0]}  # a2-01 also builds the image
    # no NPU: no packages, no weights
    assert [d["path"] for d in ops["preflight_disk"]] == ["/var/lib/docker"]
    npu = files["group_vars/npu.yml"]
    policies = ("npu_driver_package", "npu_driver_cache_dir")
    assert {k: npu[k] for k in npu if k.startswith("npu_driver_") and k not in policies} == {
        "npu_driver_kernel_headers": "install",
        "npu_driver_reboot": "never",
        "npu_driver_reboot_timeout_s": 1800,
        "npu_driver_stop_serving": False,
        "npu_driver_holder_services": [],  # no npu-exporter in this spec
    }
    cache = "/var/cache/ascend-orchestrator/packages"  # where preflight checks the free space for packages
    assert (npu["npu_driver_cache_dir"], npu["npu_firmware_cache_dir"]) == (cache, cache)
    assert next(d["path"] for d in head["preflight_disk"]) == cache


def test_a3_dies_and_duo_cards_on_the_pci_bus(a3: dict[str, Any], duo: dict[str, Any]) -> None:
    a3_host = rendered(a3)["host_vars/a3-01.yml"]["preflight_npu"]
    assert (a3_host["pci_device_id"], a3_host["pci_functions"]) == ("d803", 16)  # 8 cards x 2 dies
    duo_host = rendered(duo)["host_vars/duo-01.yml"]["preflight_npu"]
    assert (duo_host["pci_device_id"], duo_host["pci_functions"]) == ("d500", 2)  # one function per card


def test_spec_policies_reach_the_inventory(pair: dict[str, Any]) -> None:
    pair["software"].update(
        kernel_headers="provided",
        stop_serving=True,
        reboot={"policy": "allowed", "batch_size": 2, "timeout_s": 600},
    )
    pair["os"]["time_sync"] = "warn"
    pair["software"]["disk"] = {"packages_gib": 1.5, "images_gib": 2}
    files = rendered(pair)
    ops_disk = files["host_vars/ops-01.yml"]["preflight_disk"]
    assert [(d["path"], d["min_free_gib"]) for d in files["host_vars/a2-02.yml"]["preflight_disk"]] == [
        ("/var/cache/ascend-orchestrator/packages", 1.5),
        ("/var/lib/docker", 2.0),
        ("/data/models/DeepSeek-R1-W8A8", 673.0),  # weights stay what the model needs
    ]
    assert [d["min_free_gib"] for d in ops_disk] == [2.0]
    npu = files["group_vars/npu.yml"]
    wanted = ("provided", "allowed", 600)
    keys = ("npu_driver_kernel_headers", "npu_driver_reboot", "npu_driver_reboot_timeout_s")
    assert tuple(npu[k] for k in keys) == wanted
    assert npu["npu_driver_stop_serving"] is True
    assert files["group_vars/all.yml"]["preflight_os"]["time_sync"] == "warn"
    assert drivers_serial(validate_data(pair).spec) == [1, 2]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("reboot", "message"),
    [
        ({"batch_size": "0%"}, "batch_size"),
        ({"batch_size": 0}, "batch_size"),
        ({"policy": "always"}, "policy"),
        ({"timeout_s": 30}, "timeout_s"),
    ],
)
def test_bad_reboot_policy_is_refused(pair: dict[str, Any], reboot: dict[str, Any], message: str) -> None:
    pair["software"]["reboot"] = reboot
    result = validate_data(pair)
    assert not result.ok and any(message in str(f) for f in result.errors)


def test_the_exporter_is_stopped_for_a_driver_upgrade(single: dict[str, Any]) -> None:
    """The exporter holds the device nodes while it runs (the driver installer refuses beside it): when the
    monitoring phase installs it, the drivers phase gets its service name, as the npu_exporter role names
    it."""
    single.setdefault("monitoring", {})["npu_exporter"] = {
        "version": "7.1.0",
        "url": "https://mirror.example.com/Ascend-mindxdl-npu-exporter_7.1.0_linux-aarch64.zip",
        "sha256": "0" * 64,
    }
    defaults = ROOT / "roles/npu_exporter/defaults/main.yml"
    role_defaults = yaml.safe_load(defaults.read_text(encoding="utf-8"))
    npu = rendered(single)["group_vars/npu.yml"]
    assert npu["npu_driver_holder_services"] == [role_defaults["npu_exporter_service"]]
    single["monitoring"]["enabled"] = False  # no monitoring phase: no exporter runs
    assert rendered(single)["group_vars/npu.yml"]["npu_driver_holder_services"] == []
