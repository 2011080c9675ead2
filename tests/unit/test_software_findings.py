"""Software rules as whole findings: one chip family per site, SOC_VERSION per chip, an HDK pair outside the
matrix, the versions an unlisted release must name, and HDK package file names
(<prefix>-npu-<driver|firmware>_<version>[_linux-<arch>].run, as Huawei names them)."""

from __future__ import annotations

from typing import Any

from tests.helpers import validate_data
from tests.spec_text import Described, described

ACCEPT = ", or set software.allow_unsupported: true to accept the risk"


def _findings(data: dict[str, Any]) -> list[Described]:
    return [described(f) for f in validate_data(data).findings]


def test_chip_families_may_not_mix(single: dict[str, Any]) -> None:
    single["profiles"]["a3"] = {"chip": "910_93", "cards": 8}
    single["servers"].append({"name": "a3-01", "address": "10.20.0.31", "profile": "a3", "roles": ["npu"]})
    single["serving"]["replicas"].append(
        {"name": "r3", "servers": ["a3-01"], "port": 8002, "parallelism": {"tp": 4, "dp": 4}}
    )
    assert _findings(single)[0] == (
        "profiles",
        "NPU servers mix chip families (910_93, 910b); one site installs one driver/firmware package and one "
        "image family",
        "split the site per chip family",
        "compat",
        [],
    )


def test_soc_version_must_be_the_chips(single: dict[str, Any]) -> None:
    single["software"]["vllm_ascend"]["soc_version"] = "ascend910b4"
    assert _findings(single) == [
        (
            "software.vllm_ascend.soc_version",
            "SOC_VERSION for 910B3 is ascend910b3, not ascend910b4",
            "remove soc_version" + ACCEPT,
            "compat",
            [],
        )
    ]
    single["software"]["vllm_ascend"]["soc_version"] = "ascend910b3"
    assert _findings(single) == []


def test_an_hdk_pair_outside_the_matrix_is_a_warning(single: dict[str, Any]) -> None:
    sw = single["software"]
    sw["driver"].update(
        version="99.1.0", path="/srv/ascend/Ascend-hdk-910b-npu-driver_99.1.0_linux-aarch64.run"
    )
    sw["firmware"].update(version="9.9.9.9.9", path="/srv/ascend/Ascend-hdk-910b-npu-firmware_9.9.9.9.9.run")
    assert _findings(single)[1] == (
        "software.driver.version",
        "neither driver 99.1.0 nor firmware 9.9.9.9.9 is in the HDK matrix; their compatibility cannot be "
        "checked",
        "use a listed HDK release",
        "compat",
        [],
    )


def test_an_unlisted_release_must_name_what_the_matrix_would_derive(single: dict[str, Any]) -> None:
    single["software"]["allow_unsupported"] = True
    single["software"]["vllm_ascend"] = {"version": "v0.30.0", "vllm": "v0.30.0"}
    missing = [
        (
            f"software.vllm_ascend.{key}",
            f"vllm-ascend v0.30.0 is not in the matrix, so '{key}' cannot be derived",
            f"set software.vllm_ascend.{key}",
            "compat",
            [],
        )
        for key in ("cann", "python", "torch_npu")
    ]
    assert _findings(single)[:3] == missing


def test_a_file_that_is_no_hdk_package_is_a_warning(single: dict[str, Any]) -> None:
    single["software"]["driver"]["path"] = "/srv/ascend/driver.run"
    assert _findings(single) == [
        (
            "software.driver.path",
            "'driver.run' does not look like a Huawei HDK driver package "
            "(Ascend-hdk-910b-npu-driver_<version>...run)",
            "check that this is the right file",
            "package",
            [],
        )
    ]


def test_a_driver_package_of_another_arch_given_as_firmware_url(single: dict[str, Any]) -> None:
    name = "Ascend-hdk-910b-npu-driver_25.5.1_linux-x86_64.run"
    single["software"]["firmware"] = {
        "version": "25.5.1",
        "url": f"https://repo.example.com/{name}",
        "sha256": "e" * 64,
    }
    assert _findings(single)[:2] == [
        (
            "software.firmware.url",
            f"'{name}' is a driver package, not a firmware",
            "point software.firmware at the firmware .run file",
            "package",
            [],
        ),
        (
            "software.firmware.url",
            f"'{name}' is built for x86_64, servers are aarch64",
            "use the package for the servers' architecture",
            "package",
            [],
        ),
    ]


def test_a_release_that_does_not_support_the_chip(a3: dict[str, Any]) -> None:
    # vllm-ascend v0.9.1 is an Atlas A2 (910B) release; A3 (910_93) support came in later releases
    a3["software"]["vllm_ascend"] = {"version": "v0.9.1"}
    assert _findings(a3) == [
        (
            "software.vllm_ascend.version",
            "vllm-ascend v0.9.1 does not support Atlas 800T A3 (910_93)",
            "pick a release that supports this chip, or set software.allow_unsupported: true to accept the "
            "risk",
            "compat",
            [],
        )
    ]
    a3["software"]["allow_unsupported"] = True
    assert _findings(a3) == [
        (
            "software.vllm_ascend.version",
            "vllm-ascend v0.9.1 does not support Atlas 800T A3 (910_93) "
            "(allowed by software.allow_unsupported)",
            "pick a release that supports this chip",
            "compat",
            [],
        )
    ]
