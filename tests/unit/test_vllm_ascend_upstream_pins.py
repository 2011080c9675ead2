"""The catalog's torch_npu / triton-ascend / torch per release are the pins of that release's
requirements.txt (vllm-project/vllm-ascend at the tag, copied under tests/data/upstream/vllm-ascend/<tag>/
with its commit in the README): the image build passes torch_npu as a pip constraint next to those pins, so
any other value makes `pip install -e vllm-ascend` unresolvable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from orchestrator.catalog import RELEASES, VllmAscendRelease

REPO = Path(__file__).resolve().parents[2]
UPSTREAM = REPO / "tests" / "data" / "upstream" / "vllm-ascend"


def requirement_pins(tag: str) -> dict[str, SpecifierSet]:
    pins: dict[str, SpecifierSet] = {}
    for raw in (UPSTREAM / tag / "requirements.txt").read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        req = Requirement(line)
        pins[re.sub(r"[-_.]+", "-", req.name.lower())] = req.specifier
    return pins


def test_every_catalog_release_has_its_upstream_files_saved() -> None:
    readme = (UPSTREAM / "README.md").read_text(encoding="utf-8")
    for release in RELEASES:
        assert (UPSTREAM / release.version / "requirements.txt").is_file(), release.version
        row = rf"^\| {re.escape(release.version)} \| [0-9a-f]{{40}} \|$"
        assert re.search(row, readme, re.M), release.version


@pytest.mark.parametrize("release", RELEASES, ids=lambda r: r.version)
def test_torch_npu_is_the_requirements_pin(release: VllmAscendRelease) -> None:
    version = release.version
    pins = requirement_pins(version)
    spec = pins["torch-npu"]
    # exactly the pinned version: `torch_npu==<catalog>` must be satisfiable together with upstream's pin
    (pin,) = [s for s in spec if s.operator == "=="]
    assert release.torch_npu == pin.version, (
        f"{version}: catalog torch_npu {release.torch_npu}, requirements.txt {spec}"
    )
    assert spec.contains(release.torch_npu, prereleases=True)


@pytest.mark.parametrize("release", RELEASES, ids=lambda r: r.version)
def test_torch_and_triton_ascend_satisfy_the_requirements(release: VllmAscendRelease) -> None:
    version = release.version
    pins = requirement_pins(version)
    assert pins["torch"].contains(release.torch, prereleases=True), (version, pins["torch"])
    triton = release.triton_ascend
    if "triton-ascend" in pins:
        (pin,) = [s for s in pins["triton-ascend"] if s.operator == "=="]
        assert triton == pin.version, f"{version}: catalog triton_ascend {triton}, requirements.txt {pin}"
    else:
        assert triton == "", f"{version}: requirements.txt pins no triton-ascend, the catalog says {triton}"


def test_a_post_release_does_not_satisfy_the_plain_pin() -> None:
    """The failure mode the pins above guard against, as pip's version matching decides it."""
    assert not SpecifierSet("==2.7.1").contains("2.7.1.post1")
    assert not SpecifierSet("==2.9.0").contains("2.9.0.post1")
