"""The catalog: data files load and validate, versions order correctly, lookups return the known facts."""

from __future__ import annotations

import copy
import itertools
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator import catalog
from orchestrator.catalog import (
    CatalogDataError,
    Version,
    driver_series,
    get_chip,
    get_model,
    get_release,
    known_module,
    unknown_options,
)
from orchestrator.catalog._data import load, parse, read_text
from orchestrator.catalog.kernels import validate_kernels
from orchestrator.catalog.load_strategies import validate_load_strategies

DATA_FILES: dict[str, Callable[[Mapping[str, Any]], object]] = {
    "chips.yaml": catalog.validate_chips,
    "models.yaml": catalog.validate_models,
    "vllm_ascend.yaml": catalog.validate_releases,
    "hdk.yaml": catalog.validate_hdk,
    "vllm_flags_removed.yaml": catalog.validate_removed,
    "kernel_modules.yaml": catalog.validate_modules,
    "kernels.yaml": validate_kernels,
    "vllm_load_strategies.yaml": validate_load_strategies,
}


def fresh(filename: str) -> dict[str, Any]:
    """A private, mutable copy of a data file (load() is cached and must not be mutated)."""
    return copy.deepcopy(dict(load(filename)))


def expect_error(validate: Callable[..., object], data: Mapping[str, Any], *fragments: str) -> None:
    with pytest.raises(ValueError) as info:
        validate(data)
    assert isinstance(info.value, CatalogDataError)
    for fragment in fragments:
        assert fragment in str(info.value)


# ------------------------------------------------------------------------------------------- data files


@pytest.mark.parametrize("filename", sorted(DATA_FILES))
def test_every_data_file_loads_and_validates(filename: str) -> None:
    assert DATA_FILES[filename](load(filename))


@pytest.mark.parametrize("filename", sorted(DATA_FILES))
def test_data_files_have_header_schema_version_and_sources(filename: str) -> None:
    text = read_text(filename)
    assert text.startswith("# "), "each file opens with a comment saying what it is"
    assert "Sources:" in text.split("schema_version", 1)[0]
    assert load(filename)["schema_version"] == 1


def test_package_data_directory_holds_exactly_the_catalog_files() -> None:
    data_dir = Path(catalog.__file__).parent / "data"
    assert {p.name for p in data_dir.glob("*.yaml")} == set(DATA_FILES)


def test_importing_the_package_reads_no_data_file() -> None:
    code = (
        "import orchestrator.catalog as c, orchestrator.catalog._data as d\n"
        "assert d.load.cache_info().currsize == 0\n"
        "c.get_chip('910B3')\n"
        "assert d.load.cache_info().currsize == 1\n"
    )
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root, env={"PYTHONPATH": str(root)})


def test_inferred_facts_are_marked() -> None:
    a3 = get_chip("910_93")
    assert a3.confidence == "inferred" and "supported_os" in a3.inferred_fields
    rc2, final = driver_series("24.1.rc2.2"), driver_series("25.5.1")
    assert rc2 is not None and rc2.confidence == "sourced"
    assert final is not None and final.confidence == "inferred"
    assert get_release("v0.13.0").confidence == "sourced" and get_release("v0.23.0").confidence == "inferred"


# ------------------------------------------------------------------------------------- malformed data


def test_malformed_chip_rows_name_file_row_and_field() -> None:
    data = fresh("chips.yaml")
    data["chips"][2]["hbm_gb_default"] = "64"
    expect_error(catalog.validate_chips, data, "chips.yaml", "chips[2] (910B3)", "hbm_gb_default")
    data = fresh("chips.yaml")
    data["chips"][0]["soc"] = "ascend910b1"
    expect_error(catalog.validate_chips, data, "chips[0] (910B1)", "unknown field(s): soc")
    data = fresh("chips.yaml")
    data["chips"][5]["supported_os"] = [{"distro": "centos", "version": "22.04", "confidence": "sourced"}]
    expect_error(catalog.validate_chips, data, "chips[5] (310P3) supported_os[0]", "distro")


def test_malformed_model_rows_are_rejected() -> None:
    data = fresh("models.yaml")
    data["models"][0]["n_routed_experts"] = 0
    expect_error(catalog.validate_models, data, "models.yaml", "models[0] (DeepSeek-V3)", "moe")
    data = fresh("models.yaml")
    data["models"][6]["kv_heads"] = 5
    expect_error(catalog.validate_models, data, "DeepSeek-R1-Distill-Qwen-1.5B", "kv_heads")


def test_malformed_release_rows_are_rejected() -> None:
    data = fresh("vllm_ascend.yaml")
    data["releases"][0], data["releases"][1] = data["releases"][1], data["releases"][0]
    expect_error(catalog.validate_releases, data, "vllm_ascend.yaml", "releases[1] (v0.9.1)", "ascending")
    data = fresh("vllm_ascend.yaml")
    data["releases"][7]["python_min"] = 3.10  # an unquoted YAML number
    expect_error(catalog.validate_releases, data, "releases[7] (v0.23.0)", "python_min", "quote")
    data = fresh("vllm_ascend.yaml")
    data["releases"][7]["released"] = ""
    expect_error(catalog.validate_releases, data, "releases[7] (v0.23.0)", "released")
    data = fresh("vllm_ascend.yaml")
    data["default"] = "v0.23.0rc1"
    expect_error(catalog.validate_releases, data, "vllm_ascend.yaml", "default")


def test_release_min_driver_below_its_cann_requirement_is_rejected() -> None:
    data = fresh("vllm_ascend.yaml")
    data["releases"][7]["min_driver"] = "24.1.0"
    canns = catalog.validate_hdk(load("hdk.yaml")).canns
    with pytest.raises(CatalogDataError, match=r"releases\[7\] \(v0\.23\.0\).*24\.1\.0.*CANN 9\.1\.0"):
        catalog.validate_releases(data, canns=canns)


def test_malformed_hdk_rows_are_rejected() -> None:
    data = fresh("hdk.yaml")
    data["driver_series"][2]["compatible_version_fw"] = "[7.3.0,7.2.99]"
    expect_error(
        catalog.validate_hdk, data, "hdk.yaml", "driver_series[2] (24.1.rc2)", "compatible_version_fw"
    )
    data = fresh("hdk.yaml")
    data["driver_series"][3]["known_pairs"] = [["24.1.rc3", "7.7.0.1.231"]]
    expect_error(catalog.validate_hdk, data, "driver_series[3] (24.1.rc3)", "known pair", "7.7.0.1.231")
    data = fresh("hdk.yaml")
    data["cann"][4]["min_driver"] = "not-a-version!"
    expect_error(catalog.validate_hdk, data, "cann[4] (8.0.RC3)", "min_driver", "invalid version")
    data = fresh("hdk.yaml")
    data["cann"][-1]["paired_driver"] = "25.0.rc1"
    expect_error(catalog.validate_hdk, data, "cann", "paired_driver 25.0.rc1 is outside")


def test_malformed_kernel_rows_are_rejected() -> None:
    data = fresh("kernels.yaml")
    data["sysctl_moves"][0]["debugfs"] = "/sys/kernel/debug/sched/migration_cost_ns"
    expect_error(validate_kernels, data, "kernels.yaml", "sysctl_moves[0]", "relative to /sys/kernel/debug")
    data = fresh("kernels.yaml")
    data["os"][0]["distro"] = "centos"
    expect_error(validate_kernels, data, "os[0]", "distro")


def test_catalog_files_cite_public_sources_only() -> None:
    data_dir = Path(catalog.__file__).resolve().parent / "data"
    files = sorted(p for p in data_dir.rglob("*") if p.is_file() and p.suffix in (".yaml", ".json"))
    assert len(files) >= len(DATA_FILES) + 9, "every data file (YAML, generated flag tables) is read"
    for path in files:
        name = str(path.relative_to(data_dir))
        text = path.read_text(encoding="utf-8")
        assert "/work/" not in text, f"{name} cites an absolute machine path"
        assert not re.findall(r"\S*shared/reference/\S+", text), f"{name} cites notes a user does not have"


def test_malformed_flags_and_modules_are_rejected() -> None:
    data = fresh("vllm_flags_removed.yaml")
    data["removed"].append(dict(data["removed"][0]))
    expect_error(catalog.validate_removed, data, "removed[1] (--swap-space)", "listed twice")
    data = fresh("kernel_modules.yaml")
    data["modules"][0]["inferred_options"] = ["log_num_mgm_entry_size"]
    expect_error(
        catalog.validate_modules, data, "kernel_modules.yaml", "modules[0] (mlx5_core)", "confidence"
    )


def test_header_and_yaml_errors_name_the_file() -> None:
    with pytest.raises(CatalogDataError, match=r"x\.yaml: schema_version must be 1"):
        parse("schema_version: 2\nchips: []\n", "x.yaml")
    with pytest.raises(CatalogDataError, match=r"x\.yaml: not valid YAML"):
        parse("schema_version: 1\nchips: [\n", "x.yaml")
    with pytest.raises(CatalogDataError, match=r"x\.yaml: 'chips' must be a non-empty list"):
        catalog.validate_chips(parse("schema_version: 1\nchips: []\n", "x.yaml"), "x.yaml")


# --------------------------------------------------------------------------------------------- Version


def strictly_increasing(texts: list[str]) -> bool:
    return all(Version(a) < Version(b) for a, b in itertools.pairwise(texts))


def test_versions_sort_in_release_order() -> None:
    hdk = [
        "23.0.rc3",
        "23.0.5",
        "24.1.rc2",
        "24.1.rc2.2",
        "24.1.rc3",
        "24.1.0",
        "24.1.0.3",
        "25.0.rc1",
        "25.0.rc1.1",
        "25.0.rc1.3",
        "25.5.1",
    ]
    assert strictly_increasing(hdk)
    pip = ["v0.23.0rc1", "v0.23.0", "0.23.0.post1", "v0.23.1"]
    torch_npu = ["2.10.0", "2.10.0.post2", "2.10.0.post4", "2.10.0.1"]
    assert strictly_increasing(pip) and strictly_increasing(torch_npu)
    cann = ["8.0.RC3", "8.0.0", "8.3.rc2", "8.5.0", "9.1.0-beta.1", "9.1.0"]
    assert strictly_increasing(cann)
    assert Version("3.2.0.dev20260322") < Version("3.2.0rc1") < Version("3.2.0")


def test_version_equality_is_by_meaning_and_str_is_original() -> None:
    assert Version("8.0.RC3") == Version("8.0.rc3") and hash(Version("8.0.RC3")) == hash(Version("8.0.rc3"))
    assert Version("v0.23.0") == Version("0.23.0") and Version("9.1") == Version("9.1.0")
    assert Version("25.0.rc1.3") > Version("25.0.rc1") and Version("24.1.rc3") < Version("24.1.0")
    assert str(Version("8.3.RC2")) == "8.3.RC2" and str(Version.parse("v0.23.0rc1")) == "v0.23.0rc1"
    assert Version("7.7.0.1.231") < Version("7.7.99") < Version("7.8.0")
    assert len({Version("9.1.0"), Version("9.1"), Version("v9.1.0")}) == 1
    with pytest.raises(AttributeError):
        Version("1.0").text = "2.0"  # type: ignore[misc]


@pytest.mark.parametrize("bad", ["", "v", "24..1", "rc1", "24.1.", "V100R001C18SPC001B233", "1 beta", "1.0x"])
def test_bad_versions_raise_a_clear_value_error(bad: str) -> None:
    with pytest.raises(ValueError, match="invalid version"):
        Version.parse(bad)


def test_matches_series() -> None:
    v = Version("24.1.rc2.2")
    assert v.matches_series("24.1.rc2") and v.matches_series("24.1") and v.matches_series("24.1.RC2.2")
    assert not v.matches_series("24.1.rc3") and not v.matches_series("24.1.rc2.2.1")
    assert Version("25.3.rc1").matches_series("25.3") and not Version("25.30.1").matches_series("25.3")


_NUMBERS = st.lists(st.integers(0, 300), min_size=1, max_size=6)


# No deadline: an example takes microseconds of CPU, and Hypothesis's default deadline (200 ms of wall time)
# would only measure how long the example waited for a CPU on a shared machine (CI runs the unit tests at
# nice 19 beside the integration tests).
@settings(deadline=None)
@given(_NUMBERS, _NUMBERS)
def test_numeric_versions_compare_like_zero_padded_tuples(a: list[int], b: list[int]) -> None:
    width = max(len(a), len(b))
    pa, pb = a + [0] * (width - len(a)), b + [0] * (width - len(b))
    va, vb = Version(".".join(map(str, a))), Version(".".join(map(str, b)))
    assert (va < vb) == (pa < pb) and (va == vb) == (pa == pb) and (va > vb) == (pa > pb)


# ------------------------------------------------------------------------------------- chips and models


def test_chip_facts() -> None:
    b3 = get_chip("910b3")
    assert (b3.name, b3.family, b3.soc_version, b3.pci_device_id) == ("910B3", "910b", "ascend910b3", "d802")
    a3 = get_chip("910_93")
    assert a3.devices_per_card_default == 2 and a3.npu_smi_name == "Ascend910"
    assert (a3.soc_version, a3.image_suffix, a3.cann_image_chip) == ("ascend910_9391", "-a3", "a3")
    duo = get_chip("310P3")
    assert not duo.supports_bf16 and not duo.has_roce and duo.devices_per_card_allowed == (1, 2)
    assert duo.soc_version == "ascend310p1" and get_chip("910B4").hbm_gb_allowed == (32, 64)
    assert ("ubuntu", "22.04") in b3.supported_os and catalog.CHIP_NAMES[0] == "910B1"
    assert [c.name for c in catalog.chips_for_pci_device("19e5:D803")] == ["910_93"]
    with pytest.raises(KeyError, match="unknown chip"):
        get_chip("910A")


def test_model_facts() -> None:
    r1 = get_model("DeepSeek-R1-W8A8")
    assert r1.moe and r1.layers == 61 and r1.quantization == "w8a8" and r1.attention == "mla"
    assert (r1.n_routed_experts, r1.experts_per_token, r1.mtp_layers, r1.hub) == (256, 8, 1, "modelscope")
    assert get_model("deepseek-r1-w8a8") is r1 and get_model("vllm-ascend/DeepSeek-R1-W8A8") is r1
    assert abs(r1.expert_params_b - 58 * 256 * 3 * 7168 * 2048 / 1e9) < 0.1
    assert r1.kv_bytes_per_token(2) == 61 * (512 + 64) * 2
    assert get_model("DeepSeek-V3.2").family == "deepseek_v32"
    assert get_model("DeepSeek-R1").quantization == "none"
    llama = get_model("DeepSeek-R1-Distill-Llama-8B")
    assert not llama.moe and llama.kv_bytes_per_token(2) == 2 * 32 * 8 * 128 * 2
    qwen = get_model("DeepSeek-R1-Distill-Qwen-1.5B")
    assert (qwen.layers, qwen.hidden_size, qwen.heads, qwen.kv_heads) == (28, 1536, 12, 2)
    assert qwen.vocab_size == 151936 and len(catalog.MODEL_NAMES) == 12
    with pytest.raises(KeyError, match="did you mean 'DeepSeek-R1'"):
        get_model("DeepSeek-R2")
    with pytest.raises(ValueError):
        r1.kv_bytes_per_token(3)


# ----------------------------------------------------------------------------------- compat matrix, HDK


def test_release_matrix() -> None:
    rel = get_release("v0.23.0")
    assert (rel.cann, rel.torch_npu, rel.image_python) == ("9.1.0", "2.10.0.post4", "3.12")
    assert (rel.vllm, rel.triton_ascend, rel.python_max_exclusive) == ("v0.23.0", "3.2.2", "3.13")
    assert get_release("0.23.0") is rel and catalog.DEFAULT_RELEASE == "v0.23.0" and rel.is_final
    versions = [Version(r.version) for r in catalog.RELEASES]
    assert versions == sorted(versions) and len(versions) == 10
    assert rel.cann_base_image(get_chip("910B3")) == "quay.io/ascend/cann:9.1.0-910b-ubuntu22.04-py3.12"
    assert rel.image_tag(get_chip("910_93")) == "quay.io/ascend/vllm-ascend:v0.23.0-a3"
    assert rel.image_tag(get_chip("310P3"), "openeuler").endswith(":v0.23.0-310p-openeuler")
    rc = get_release("v0.23.0rc1")
    assert rc.cann_for(get_chip("310P3")) == "9.1.0-beta.1" and rc.cann_for(get_chip("910B1")) == "9.0.1"
    with pytest.raises(ValueError, match="has no centos image"):
        rel.container_os("centos")
    with pytest.raises(ValueError, match="no image"):
        get_release("v0.9.1").image_tag(get_chip("910_93"))
    with pytest.raises(KeyError, match="not in the compatibility matrix"):
        get_release("v0.99.0")


# ---------------------------------------------------------------------------------------------- modules


def test_module_options() -> None:
    assert catalog.KNOWN_MODULE_OPTIONS["rdma_ucm"] == frozenset()
    assert unknown_options("rdma_ucm", ["use_centric_mode"]) == ["use_centric_mode"]
    assert unknown_options("mlx5_core", ["prof_sel", "debug_mask=1", "bogus"]) == ["bogus"]
    assert unknown_options("ib-ipoib", ["send_queue_size"]) == [] and known_module("ib-ipoib")
    assert not known_module("nvme") and unknown_options("nvme", ["io_timeout"]) == ["io_timeout"]
