"""OS, HDK driver/firmware, packages and the vllm-ascend compatibility matrix."""

from __future__ import annotations

from typing import Any

from tests.helpers import validate_data


def _errors(data: dict[str, Any]) -> list[str]:
    return [f.message for f in validate_data(data).errors]


def test_stack_is_derived_from_the_matrix(pair: dict) -> None:
    plan = validate_data(pair).plan
    assert plan is not None
    st = plan.stack
    assert (st.vllm, st.cann, st.torch_npu, st.python) == ("v0.23.0", "9.1.0", "2.10.0.post4", "3.12")
    (img,) = plan.images
    assert img.soc_version == "ascend910b3"
    assert img.base_image == "quay.io/ascend/cann:9.1.0-910b-ubuntu22.04-py3.12"
    assert dict(img.build_args)["COMPILE_CUSTOM_KERNELS"] == "1"


def test_a3_and_310p_images(a3: dict, duo: dict) -> None:
    p3, pd = validate_data(a3).plan, validate_data(duo).plan
    assert p3 is not None and pd is not None
    assert p3.images[0].soc_version == "ascend910_9391" and "-a3-" in p3.images[0].base_image
    assert p3.images[0].upstream_image.endswith("v0.23.0-a3")
    assert pd.images[0].soc_version == "ascend310p1" and pd.images[0].upstream_image.endswith("-310p")


def test_explicit_values_contradicting_the_matrix(pair: dict) -> None:
    pair["software"]["vllm_ascend"].update({"cann": "8.5.1", "torch_npu": "2.9.0.post1"})
    errs = _errors(pair)
    assert any("built and tested with cann 9.1.0, not 8.5.1" in m for m in errs)
    assert any("torch_npu 2.10.0.post4, not 2.9.0.post1" in m for m in errs)
    pair["software"]["allow_unsupported"] = True
    result = validate_data(pair)
    assert result.ok
    assert sum("allowed by software.allow_unsupported" in f.message for f in result.warnings) == 2
    assert result.plan is not None and result.plan.stack.cann == "8.5.1"


def test_unknown_release_suggests_and_needs_explicit_values_when_allowed(pair: dict) -> None:
    pair["software"]["vllm_ascend"]["version"] = "v0.23.1"
    result = validate_data(pair)
    (err,) = [f for f in result.errors if f.path == ("software", "vllm_ascend", "version")]
    assert "not in the compatibility matrix" in err.message and "did you mean" in (err.fix or "")
    pair["software"]["allow_unsupported"] = True
    missing = {f.path[-1] for f in validate_data(pair).errors}
    assert {"vllm", "cann", "torch_npu", "python"} <= missing


def _hdk(data: dict[str, Any], driver: str, firmware: str) -> None:
    sw = data["software"]
    sw["driver"].update(
        version=driver, path=f"/srv/ascend/Ascend-hdk-910b-npu-driver_{driver}_linux-aarch64.run"
    )
    sw["firmware"].update(version=firmware, path=f"/srv/ascend/Ascend-hdk-910b-npu-firmware_{firmware}.run")


def test_firmware_that_refuses_the_driver_is_an_error(pair: dict) -> None:
    # firmware 7.5.0.1.129's version.info: compatible_version_drv=[23.0.0,23.0.0.],[24.0,24.0.],[24.1,24.1.]
    _hdk(pair, "25.5.1", "7.5.0.1.129")
    (err,) = [f for f in validate_data(pair).errors if f.path == ("software", "firmware", "version")]
    assert "firmware 7.5.0.1.129 accepts drivers [23.0.0,23.0.0.],[24.0,24.0.],[24.1,24.1.]" in err.message
    assert "not 25.5.1" in err.message


def test_the_fix_names_the_firmware_released_with_the_driver(pair: dict) -> None:
    """hdk.yaml's known pair (the 910B npu-smi board sample: Software 25.5.1 / Firmware 7.8.0.6.201)."""
    _hdk(pair, "25.5.1", "7.5.0.1.129")
    (err,) = [f for f in validate_data(pair).errors if f.path == ("software", "firmware", "version")]
    assert err.fix is not None and err.fix.startswith(
        "install firmware 7.8.0.6.201, released with driver 25.5.1 in the same HDK release"
    )
    assert "software.firmware.version: 7.8.0.6.201" in err.fix


def test_an_inferred_range_says_where_it_comes_from(pair: dict) -> None:
    """Driver 25.5's compatible_version_fw is inferred in hdk.yaml: no version.info of it was seen."""
    _hdk(pair, "25.5.1", "6.4.0.1.100")
    (err,) = [f for f in validate_data(pair).errors if f.path == ("software", "firmware", "version")]
    assert err.message == (
        "driver 25.5.1 and firmware 6.4.0.1.100 do not accept each other: driver 25.5.1 accepts firmware "
        "[7.0.0,8.9.9] (no published version.info of driver 25.5 was found: orchestrator/catalog/data/"
        "hdk.yaml infers the range from the nearest release whose version.info is known), not 6.4.0.1.100"
    )
    assert "its version.info" not in err.message


def test_driver_older_than_the_canns_range_is_an_error(pair: dict) -> None:
    # CANN 9.1.0 release notes: 9.1.X is N on HDK 25.0.X, Y from 25.2.X (v0.23.0 builds on CANN 9.1.0)
    _hdk(pair, "25.0.rc1.1", "7.7.0.1.231")
    errs = _errors(pair)
    assert any(
        "builds the Atlas 800T A2 image on CANN 9.1.0, which supports HDK drivers 25.2.x to 26.2.rc1.x; "
        "driver 25.0.rc1.1 is older" in m
        for m in errs
    ), errs
    _hdk(pair, "25.2.0", "7.7.0.6.236")
    assert _errors(pair) == []


def test_driver_newer_than_the_canns_range_is_an_error(pair: dict) -> None:
    # CANN 8.5.0 release notes: HDK 25.5.X, 25.3.X, 25.2.X, 25.0.X (vllm-ascend v0.13.0 builds on 8.5.0)
    pair["software"]["vllm_ascend"]["version"] = "v0.13.0"
    _hdk(pair, "26.0.rc1", "7.8.0.6.201")
    (err,) = validate_data(pair).errors
    assert (err.path, err.code) == (("software", "driver", "version"), "compat")
    assert err.message == (
        "vllm-ascend v0.13.0 builds the Atlas 800T A2 image on CANN 8.5.0, which supports HDK drivers "
        "25.0.x to 25.5.x; driver 26.0.rc1 is newer"
    )
    # newer: not 'upgrade ... to' but 'use ... of' a release in the range
    assert err.fix == (
        "use the driver and firmware of an HDK release in 25.0.x to 25.5.x (CANN 8.5.0 ships with 25.5.0), "
        "or set software.allow_unsupported: true to accept the risk"
    )


def test_host_cann_is_checked_against_the_driver(pair: dict) -> None:
    pair["software"]["cann"] = {
        "version": "8.2.RC1",
        "path": "/srv/ascend/Ascend-cann-toolkit_8.2.RC1_linux-aarch64.run",
        "sha256": "0" * 64,
    }
    (err,) = [f for f in validate_data(pair).errors if f.path == ("software", "cann", "version")]
    assert (
        "host CANN 8.2.RC1, which supports HDK drivers 24.1.rc2.x to 25.2.x; driver 25.5.1 is newer"
        in err.message
    )


def test_package_names_are_checked_against_chip_version_and_arch(a3: dict) -> None:
    a3["software"]["driver"]["path"] = "/srv/ascend/Ascend-hdk-910b-npu-driver_25.5.1_linux-aarch64.run"
    assert any("is for Ascend-hdk-910b, but the servers have" in m for m in _errors(a3))
    a3["software"]["driver"]["path"] = "/srv/ascend/Atlas-A3-hdk-npu-driver_25.5.0_linux-aarch64.run"
    assert any("does not match the file name" in m for m in _errors(a3))
    a3["software"]["driver"]["path"] = "/srv/ascend/Atlas-A3-hdk-npu-driver_25.5.1_linux-x86_64.run"
    assert any("is built for x86_64" in m for m in _errors(a3))
    a3["software"]["driver"]["path"] = "/srv/ascend/Atlas-A3-hdk-npu-firmware_7.8.0.6.201.run"
    assert any("is a firmware package, not a driver" in m for m in _errors(a3))


def test_os_must_be_supported_by_the_driver(pair: dict) -> None:
    pair["os"] = {"distro": "kylin", "version": "22.04"}
    assert any("is not supported by the Atlas 800T A2 HDK driver" in m for m in _errors(pair))


def test_debian_12_is_for_simulated_servers_only(pair: dict) -> None:
    pair["os"] = {"distro": "debian", "version": "12"}
    messages = _errors(pair)
    assert any("debian 12 is the OS of simulated servers only" in m for m in messages), messages
    pair["os"]["simulation"] = True
    assert not [m for m in _errors(pair) if "debian" in m]


def test_simulation_flag_does_not_widen_the_supported_os_list(pair: dict) -> None:
    pair["os"] = {"distro": "kylin", "version": "22.04", "simulation": True}
    assert any("is not supported by the Atlas 800T A2 HDK driver" in m for m in _errors(pair))


def test_one_chip_family_per_site(single: dict) -> None:
    single["profiles"]["duo"] = {"chip": "310P3", "cards": 2}
    single["servers"].append({"name": "duo-01", "address": "10.20.0.12", "profile": "duo"})
    single["serving"]["replicas"].append({"name": "d", "servers": ["duo-01"], "port": 8000})
    assert any("mix chip families" in m for m in _errors(single))


def test_build_args_may_not_override_derived_values(single: dict) -> None:
    single["image"] = {
        "build_args": {"SOC_VERSION": "ascend910b1", "PIP_INDEX_URL": "https://pypi.example/simple"}
    }
    result = validate_data(single)
    assert [f.path for f in result.errors] == [("image", "build_args", "SOC_VERSION")]
    del single["image"]["build_args"]["SOC_VERSION"]
    plan = validate_data(single).plan
    assert (
        plan is not None and dict(plan.images[0].build_args)["PIP_INDEX_URL"] == "https://pypi.example/simple"
    )
