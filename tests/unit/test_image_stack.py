"""The stack and image of a release outside the matrix, of a chip the release does not support and of an
explicit CANN (each allowed by software.allow_unsupported): the base image then follows the CANN image tag
scheme quay.io/ascend/cann:<cann, lower case>-<chip: 910b | a3 | 310p>-<os tag>-py<python>, with the os tag
of the release's own Dockerfiles (ubuntu22.04; openEuler 22.03 for v0.9.1, 24.03 for later releases)."""

from __future__ import annotations

from typing import Any

from orchestrator.planning.build import stack_plan
from orchestrator.planning.model import SitePlan, StackPlan
from tests.helpers import validate_data

VLLM_REPO = "https://github.com/vllm-project/vllm.git"
VLLM_ASCEND_REPO = "https://github.com/vllm-project/vllm-ascend.git"


def _plan(data: dict[str, Any], stack: dict[str, str], base_os: str | None = None) -> SitePlan:
    data["software"]["allow_unsupported"] = True
    data["software"]["vllm_ascend"] = stack
    if base_os is not None:
        data.setdefault("image", {})["base_os"] = base_os
    result = validate_data(data)
    assert result.plan is not None, [f.message for f in result.errors]
    return result.plan


UNLISTED = {
    "version": "v0.26.0",
    "vllm": "v0.26.0",
    "cann": "9.2.RC1",
    "torch_npu": "2.11.0",
    "python": "3.12",
}


def test_a_release_outside_the_matrix_uses_the_explicit_versions(single: dict[str, Any]) -> None:
    plan = _plan(single, dict(UNLISTED))
    # torch and triton-ascend come from the matrix only: unknown here
    assert plan.stack == StackPlan("v0.26.0", "v0.26.0", "9.2.RC1", "", "2.11.0", "", "3.12")
    (image,) = plan.images
    base = "quay.io/ascend/cann:9.2.rc1-910b-ubuntu22.04-py3.12"
    assert (image.chip, image.cann, image.os_family, image.base_image) == ("910B3", "9.2.RC1", "ubuntu", base)
    assert image.upstream_image == "quay.io/ascend/vllm-ascend:v0.26.0"
    assert image.tag == "vllm-ascend-site:v0.26.0-ascend910b3"
    assert dict(image.build_args) == {
        "BASE_IMAGE": base,
        "COMPILE_CUSTOM_KERNELS": "1",
        "SOC_VERSION": "ascend910b3",
        "VLLM_ASCEND_REPO": VLLM_ASCEND_REPO,
        "VLLM_ASCEND_TAG": "v0.26.0",
        "VLLM_REPO": VLLM_REPO,
        "VLLM_TAG": "v0.26.0",
        "TORCH_NPU_VERSION": "2.11.0",  # the explicit torch_npu of the stack
    }


def test_openeuler_image_of_an_unlisted_release_without_custom_kernels(single: dict[str, Any]) -> None:
    single.setdefault("image", {})["compile_custom_kernels"] = False
    (image,) = _plan(single, dict(UNLISTED), base_os="openeuler").images
    base = "quay.io/ascend/cann:9.2.rc1-910b-openeuler24.03-py3.12"
    assert (image.os_family, image.base_image) == ("openeuler", base)
    assert image.upstream_image == "quay.io/ascend/vllm-ascend:v0.26.0-openeuler"
    assert image.tag == "vllm-ascend-site:v0.26.0-ascend910b3-openeuler"
    assert dict(image.build_args)["COMPILE_CUSTOM_KERNELS"] == "0"


def test_explicit_cann_on_a_listed_release_keeps_the_releases_os_tag(single: dict[str, Any]) -> None:
    # v0.9.1's openEuler Dockerfile starts FROM openeuler22.03 images; the CANN is the explicit 8.1.RC1
    plan = _plan(single, {"version": "v0.9.1", "cann": "8.1.RC1"}, base_os="openeuler")
    assert plan.stack == StackPlan("v0.9.1", "v0.9.1", "8.1.RC1", "2.5.1", "2.5.1.post1", "", "3.11")
    (image,) = plan.images
    base = "quay.io/ascend/cann:8.1.rc1-910b-openeuler22.03-py3.11"
    assert (image.cann, image.base_image) == ("8.1.RC1", base)


def test_a_chip_the_release_does_not_support_gets_the_scheme_base(a3: dict[str, Any]) -> None:
    # v0.9.1 supports 910B only; an A3 (allowed) gets the CANN 8.2.RC1 image of the a3 line
    (image,) = _plan(a3, {"version": "v0.9.1"}).images
    assert (image.chip, image.cann) == ("910_93", "8.2.RC1")
    assert image.base_image == "quay.io/ascend/cann:8.2.rc1-a3-ubuntu22.04-py3.11"
    assert image.upstream_image == "quay.io/ascend/vllm-ascend:v0.9.1-a3"


def test_images_follow_the_chips_of_npu_servers_only(pair: dict[str, Any]) -> None:
    # ops-01 (monitoring) gets a 300I Duo profile: it serves nothing, so no 310P image is built
    pair["profiles"]["duo"] = {"chip": "310P3", "cards": 4, "devices_per_card": 2}
    pair["servers"][2]["profile"] = "duo"
    result = validate_data(pair)
    assert result.plan is not None, [f.message for f in result.errors]
    assert [i.chip for i in result.plan.images] == ["910B3"]


def test_an_unlisted_release_leaves_what_it_does_not_name_empty(single: dict[str, Any]) -> None:
    # nothing is invented for a release outside the matrix: each version it does not name stays empty
    # (validation then asks for the missing ones: tests/unit/test_software_findings.py)
    single["software"]["allow_unsupported"] = True
    single["software"]["vllm_ascend"] = {"version": "v0.30.0"}
    spec = validate_data(single).spec
    assert spec is not None
    assert stack_plan(spec) == StackPlan("v0.30.0", "", "", "", "", "", "")
    single["software"]["vllm_ascend"] = {"version": "v0.30.0", "vllm": "v0.30.1", "python": "3.13"}
    spec = validate_data(single).spec
    assert spec is not None
    assert stack_plan(spec) == StackPlan("v0.30.0", "v0.30.1", "", "", "", "", "3.13")
