"""The image plan against vllm-ascend's own Dockerfiles: the base image per chip, OS and release is the FROM
line upstream uses (tests/fixtures/vllm_ascend/dockerfile_from.txt, copied from the repository at each tag),
and every build arg is one our Dockerfile declares or one upstream's Dockerfile declares."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from orchestrator.planning.image import DERIVED_BUILD_ARGS, DOCKERFILE_ARGS, OWN_ARGS, UPSTREAM_ARGS
from tests.helpers import validate_data

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_ascend"
# Upstream file name -> (a chip of that family, container OS family): from the file names, not the catalog.
DOCKERFILES = {
    "Dockerfile": ("910B3", "ubuntu"),
    "Dockerfile.openEuler": ("910B3", "openeuler"),
    "Dockerfile.a3": ("910_93", "ubuntu"),
    "Dockerfile.a3.openEuler": ("910_93", "openeuler"),
    "Dockerfile.310p": ("310P3", "ubuntu"),
    "Dockerfile.310p.openEuler": ("310P3", "openeuler"),
}
_LINE = re.compile(r"^(?P<tag>v\S+) (?P<path>Dockerfile\S*) [0-9a-f]+: FROM (?P<image>\S+)$")


def from_lines() -> list[tuple[str, str, str]]:
    out = []
    for line in (FIXTURES / "dockerfile_from.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            continue
        m = _LINE.match(line)
        assert m, line
        out.append((m["tag"], m["path"], m["image"]))
    return out


def _site(base: dict[str, Any], release: str, chip: str, os_family: str) -> dict[str, Any]:
    data = copy.deepcopy(base)
    data["software"]["vllm_ascend"]["version"] = release
    data["image"] = {"base_os": os_family}
    for prof in data["profiles"].values():
        prof["chip"] = chip
        prof.pop("devices_per_card", None)
        prof.pop("hbm_gb", None)
    return data


@pytest.mark.parametrize(("tag", "path", "image"), from_lines())
def test_base_image_is_upstreams_from_line(
    tag: str, path: str, image: str, single: dict[str, Any], a3: dict[str, Any], duo: dict[str, Any]
) -> None:
    chip, os_family = DOCKERFILES[path]
    base = {"910B3": single, "910_93": a3, "310P3": duo}[chip]
    data = _site(base, tag, chip, os_family)
    data["software"]["allow_unsupported"] = True  # old releases contradict the example's driver; irrelevant
    result = validate_data(data)
    assert result.plan is not None, [f.message for f in result.errors]
    (img,) = result.plan.images
    assert img.base_image == image
    assert dict(img.build_args)["BASE_IMAGE"] == image


def test_every_upstream_dockerfile_of_a_release_is_covered() -> None:
    seen = {(tag, path) for tag, path, _ in from_lines()}
    assert ("v0.9.1", "Dockerfile.openEuler") in seen and ("v0.9.1", "Dockerfile.a3") not in seen
    assert len(seen) == 2 + 9 * 6  # v0.9.1: two files; every later release: six


def test_build_args_exist_in_our_or_upstreams_dockerfile(pair: dict[str, Any]) -> None:
    upstream = {
        m.group(1)
        for m in re.finditer(
            r"^ARG (\w+)", (FIXTURES / "dockerfile_v0.23.0_args.txt").read_text(encoding="utf-8"), re.M
        )
    }
    # the args the old plan passed are not upstream ARGs at v0.23.0
    assert "CANN_VERSION" not in upstream and "VLLM_ASCEND_TAG" not in upstream
    assert set(UPSTREAM_ARGS) <= upstream
    assert not set(OWN_ARGS) & upstream
    plan = validate_data(pair).plan
    assert plan is not None
    passed = set(dict(plan.images[0].build_args))
    assert passed <= DOCKERFILE_ARGS and passed - set(OWN_ARGS) <= upstream
    assert "CANN_VERSION" not in passed and "BASE_IMAGE" in passed


def test_310p_on_v0_23_0rc1_uses_the_beta_cann_and_its_driver_range(duo: dict[str, Any]) -> None:
    duo["software"]["vllm_ascend"]["version"] = "v0.23.0rc1"
    result = validate_data(duo)
    assert result.plan is not None
    (img,) = result.plan.images
    assert img.cann == "9.1.0-beta.1" and result.plan.stack.cann == "9.0.1"
    # CANN 9.1.0-beta.x pairs with HDK 25.5.1 .. 26.0.RC1: a 25.3 driver is refused for this image only
    duo["software"]["driver"].update(
        version="25.3.rc1", path="/srv/ascend/Ascend-hdk-310p-npu-driver_25.3.rc1_linux-aarch64.run"
    )
    duo["software"]["firmware"].update(
        version="7.8.0.2.212", path="/srv/ascend/Ascend-hdk-310p-npu-firmware_7.8.0.2.212.run"
    )
    msgs = [f.message for f in validate_data(duo).errors]
    assert any("image on CANN 9.1.0-beta.1" in m and "25.3.rc1 is older" in m for m in msgs), msgs


@pytest.mark.parametrize("key", sorted(DERIVED_BUILD_ARGS))
def test_derived_build_args_cannot_be_overridden(key: str, single: dict[str, Any]) -> None:
    single["image"] = {"build_args": {key: "x"}}
    assert [f.path for f in validate_data(single).errors] == [("image", "build_args", key)]


def test_v0_9_1_openeuler_base_is_openeuler22_03(single: dict[str, Any]) -> None:
    single["software"]["vllm_ascend"]["version"] = "v0.9.1"
    single["software"]["allow_unsupported"] = True
    single["image"] = {"base_os": "openeuler"}
    plan = validate_data(single).plan
    assert plan is not None and plan.images[0].base_image.endswith("-910b-openeuler22.03-py3.11")
    assert plan.images[0].upstream_image == "quay.io/ascend/vllm-ascend:v0.9.1-openeuler"
