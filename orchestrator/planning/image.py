"""The serving image each chip family needs: its CANN base image and the build args of our Dockerfile.

We build from our own Dockerfile (roles/vllm_image/files/vllm-ascend/Dockerfile), not from vllm-ascend's:
upstream's FROM line is fixed per tag and file (Dockerfile, Dockerfile.a3, Dockerfile.310p, each with an
.openEuler twin) and declares no CANN_VERSION or VLLM_ASCEND_TAG build arg, so the base image cannot be passed
to it. The plan derives the FROM line upstream uses for the chip, OS and release (catalog: vllm_ascend.yaml,
including cann_image_overrides) and passes it as BASE_IMAGE, plus the ARGs upstream's Dockerfiles declare.
"""

from __future__ import annotations

from orchestrator.catalog import ChipFacts, VllmAscendRelease, get_release
from orchestrator.catalog.matrix import CANN_IMAGE_REPO, IMAGE_REPO
from orchestrator.planning.model import ImagePlan, StackPlan
from orchestrator.planning.resolve import ResolvedProfile
from orchestrator.spec.site import SiteSpec

VLLM_REPO = "https://github.com/vllm-project/vllm.git"
VLLM_ASCEND_REPO = "https://github.com/vllm-project/vllm-ascend.git"

UPSTREAM_ARGS = (
    "SOC_VERSION",
    "COMPILE_CUSTOM_KERNELS",
    "VLLM_REPO",
    "VLLM_TAG",
    "PIP_INDEX_URL",
)
"""ARGs we pass under the names vllm-ascend's own Dockerfiles declare (v0.23.0 Dockerfile: PIP_INDEX_URL,
MOONCAKE_TAG, VLLM_REPO, VLLM_TAG, VLLM_COMMIT, SOC_VERSION, COMPILE_CUSTOM_KERNELS)."""

OWN_ARGS = (
    "BASE_IMAGE",
    "VLLM_ASCEND_REPO",
    "VLLM_ASCEND_TAG",
    "TORCH_NPU_VERSION",
    "PYTORCH_INDEX_URL",
    "ASCEND_INDEX_URL",
    "APT_MIRROR",
)
"""ARGs only our Dockerfile has (at v0.23.0): the FROM image, where to fetch vllm-ascend (upstream COPYs its
tree), the torch_npu the release pins (upstream takes it from vllm-ascend's requirements), the torch CPU and
Ascend wheel indexes (upstream HEAD names; v0.23.0 hard-codes them) and an apt/yum mirror."""

OPTIONAL_ARGS = frozenset({"PIP_INDEX_URL", "PYTORCH_INDEX_URL", "ASCEND_INDEX_URL", "APT_MIRROR"})
"""Build args with a default in the Dockerfile that the plan passes only when image.build_args sets them."""

DOCKERFILE_ARGS = frozenset({*OWN_ARGS, *UPSTREAM_ARGS})
"""Every build arg the plan may pass; roles/vllm_image/files/vllm-ascend/Dockerfile must declare each (its
test compares)."""

DERIVED_BUILD_ARGS = frozenset(
    {"BASE_IMAGE", "SOC_VERSION", "COMPILE_CUSTOM_KERNELS", "VLLM_TAG", "VLLM_ASCEND_TAG"}
    | {"TORCH_NPU_VERSION"}  # the release's torch_npu (versioning policy)
    | {
        "CANN_VERSION",
        "CANN_QUAY_URL",
        "BASE_OS",
    }  # upstream HEAD names for the base image: set image.* instead
)
"""Build args derived from the chip, the OS and the matrix; image.build_args may not set them."""


def base_image(release: VllmAscendRelease, chip: ChipFacts, os_family: str) -> str:
    """The CANN image vllm-ascend's Dockerfile for this chip and OS starts FROM at this release."""
    return release.cann_base_image(chip, os_family)


def _scheme_base(stack: StackPlan, chip: ChipFacts, os_tag: str) -> str:
    # An explicit CANN or a release outside the matrix (both need allow_unsupported): the tag scheme itself.
    return f"{CANN_IMAGE_REPO}:{stack.cann.lower()}-{chip.cann_image_chip}-{os_tag}-py{stack.python}"


def npu_chips(spec: SiteSpec, profiles: dict[str, ResolvedProfile]) -> dict[str, ChipFacts]:
    return {
        p.chip.name: p.chip
        for p in profiles.values()
        if any(s.profile == p.name and "npu" in s.roles for s in spec.servers)
    }


def image_plans(
    spec: SiteSpec, stack: StackPlan, profiles: dict[str, ResolvedProfile]
) -> tuple[ImagePlan, ...]:
    try:
        release: VllmAscendRelease | None = get_release(stack.vllm_ascend)
    except KeyError:
        release = None
    chips = npu_chips(spec, profiles)
    os_family = spec.image.base_os
    out = []
    for name in sorted(chips):
        chip = chips[name]
        os_tag = "ubuntu22.04" if os_family == "ubuntu" else "openeuler24.03"
        known = release is not None and chip.family in release.chips and os_family in dict(release.image_os)
        if release is not None and known and not spec.software.vllm_ascend.cann:
            derived, cann = base_image(release, chip, os_family), release.cann_for(chip)
        else:
            if release is not None and os_family in dict(release.image_os):
                os_tag = release.container_os(os_family)
            derived, cann = _scheme_base(stack, chip, os_tag), stack.cann
        base = spec.image.base_image or derived
        suffix = chip.image_suffix + ("-openeuler" if os_family == "openeuler" else "")
        args = {
            "BASE_IMAGE": base,
            "SOC_VERSION": chip.soc_version,
            "COMPILE_CUSTOM_KERNELS": "1" if spec.image.compile_custom_kernels else "0",
            "VLLM_REPO": VLLM_REPO,
            "VLLM_TAG": stack.vllm,
            "VLLM_ASCEND_REPO": VLLM_ASCEND_REPO,
            "VLLM_ASCEND_TAG": stack.vllm_ascend,
            "TORCH_NPU_VERSION": stack.torch_npu,
        }
        args.update(spec.image.build_args)
        out.append(
            ImagePlan(
                chip=name,
                soc_version=chip.soc_version,
                cann=cann,
                os_family=os_family,
                base_image=base,
                upstream_image=f"{IMAGE_REPO}:{stack.vllm_ascend}{suffix}",
                tag=f"{spec.image.name}:{stack.vllm_ascend}-{chip.soc_version}"
                + ("-openeuler" if os_family == "openeuler" else ""),
                build_args=tuple(sorted(args.items())),
            )
        )
    return tuple(out)
