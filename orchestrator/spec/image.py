"""The vLLM-Ascend serving image: where it is built and how it is shipped."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from orchestrator.spec.common import Renamed, SecretRef, SpecModel

RENAMED_BASE_OS: dict[str, Renamed] = {
    "ubuntu22.04": Renamed(
        "ubuntu",
        "image.base_os names the OS family now, 'ubuntu'; the version comes from the vllm-ascend release "
        "(ubuntu22.04)",
        "the OS family; the vllm-ascend release picks ubuntu22.04",
    ),
    "openeuler24.03": Renamed(
        "openeuler",
        "image.base_os names the OS family now, 'openeuler'; the version comes from the vllm-ascend release "
        "(openeuler24.03; openeuler22.03 for v0.9.1)",
        "the OS family; the vllm-ascend release picks openeuler24.03, or openeuler22.03 for v0.9.1",
    ),
}
"""image.base_os values the spec used to accept (an OS and its version): the family migrate writes instead."""


class Registry(SpecModel):
    url: str = Field(description="Registry host[:port]/namespace, e.g. registry.example.com/ai.")
    username: str | None = None
    password: SecretRef | None = Field(None, description="Secret reference (env:NAME or file:PATH).")
    insecure: bool = False


class Image(SpecModel):
    build_host: str | None = Field(
        None, description="Server that builds the image (default: the first server with role 'build')."
    )
    name: str = Field("vllm-ascend-site", pattern=r"^[a-z0-9][a-z0-9._/-]*$", description="Image repository.")
    registry: Registry | None = Field(
        None, description="Push to and pull from this registry; default: ship the image as a tarball."
    )
    base_os: Literal["ubuntu", "openeuler"] = Field(
        "ubuntu",
        description="OS family of the CANN base image (container OS, independent of the host OS); the "
        "version is the release's (ubuntu22.04; openeuler22.03 for v0.9.1, openeuler24.03 later).",
    )
    base_image: str | None = Field(
        None,
        description="CANN base image (BASE_IMAGE); default: the FROM line of vllm-ascend's Dockerfile for "
        "the chip, OS and release (quay.io/ascend/cann:...).",
    )
    build_args: dict[str, str] = Field(
        default_factory=dict,
        description="Extra docker build args (PIP_INDEX_URL, ...). Derived ones are fixed.",
    )
    tag_policy: Literal["digest", "version"] = Field(
        "digest", description="digest: deploy by content digest (immutable); version: by tag."
    )
    compile_custom_kernels: bool = Field(True, description="COMPILE_CUSTOM_KERNELS build arg.")
    context: str | None = Field(
        None,
        description="Build context on the controller: a folder with the Dockerfile and what it COPYs "
        "(default: roles/vllm_image/files/vllm-ascend of this checkout). The image tag carries a hash of "
        "its files and the build args; the simulator points it at the fake vLLM image's context.",
    )

    @field_validator("base_os", mode="before")
    @classmethod
    def _renamed(cls, value: object) -> object:
        if isinstance(value, str) and value in RENAMED_BASE_OS:
            why = RENAMED_BASE_OS[value].why
            raise ValueError(f"'{value}' is not an image.base_os value any more: {why}")
        return value
