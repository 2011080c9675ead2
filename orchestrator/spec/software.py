"""OS, HDK driver/firmware, host CANN and the vllm-ascend stack."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, AnyUrl, Field, model_validator

from orchestrator.catalog.version import Version
from orchestrator.spec.common import SpecModel

Sha256 = str


def _check_version(text: str) -> str:
    Version.parse(text)  # ValueError says what is wrong; the structural check reports it at the field
    return text


VersionText = Annotated[str, AfterValidator(_check_version)]
"""A version as Huawei or pip writes it (24.1.rc3, 7.8.0.2.212, v0.23.0rc1); anything else is an error."""


class PackageSource(SpecModel):
    """A package the controller ships to hosts: a controller-side path or a URL, always with its sha256."""

    version: VersionText = Field(
        description="Package version as Huawei names it, e.g. 25.5.1 or 7.8.0.2.212."
    )
    path: str | None = Field(None, description="File on the controller.")
    url: AnyUrl | None = Field(None, description="Download URL (fetched once by the controller).")
    sha256: str = Field(
        pattern=r"^[0-9a-f]{64}$",
        description="Lower-case hex SHA-256 of the package file. Required: the host layer verifies it.",
    )

    @model_validator(mode="after")
    def _one_source(self) -> PackageSource:
        if (self.path is None) == (self.url is None):
            raise ValueError("give exactly one of 'path' (file on the controller) or 'url'")
        return self


class OperatingSystem(SpecModel):
    distro: Literal["ubuntu", "openeuler", "kylin", "debian"] = Field(description="Host OS distribution.")
    version: Literal["20.04", "22.04", "22.03", "24.03", "v10", "12"] = Field(
        description="ubuntu 20.04/22.04, openeuler 22.03/24.03, kylin v10; debian 12 only with simulation."
    )
    simulation: bool = Field(
        False,
        description="The servers are simulated (`orchestrator sim` writes it): allows the OS the catalog "
        "marks simulation-only (debian 12, the simulated servers' OS). Never set it for real servers.",
    )


class VllmAscendStack(SpecModel):
    """The serving stack. Everything but `version` is derived from the compatibility matrix."""

    version: VersionText = Field("v0.23.0", description="vllm-ascend release, e.g. v0.23.0.")
    vllm: VersionText | None = Field(None, description="Upstream vLLM tag (derived).")
    cann: VersionText | None = Field(None, description="CANN version of the base image (derived).")
    torch_npu: VersionText | None = Field(None, description="torch_npu version (derived).")
    python: VersionText | None = Field(None, description="Python in the image (derived).")
    soc_version: str | None = Field(None, description="SOC_VERSION build arg (derived from the chip).")


class Software(SpecModel):
    driver: PackageSource = Field(description="HDK NPU driver .run package.")
    firmware: PackageSource = Field(description="HDK NPU firmware .run package.")
    cann: PackageSource | None = Field(
        None, description="Optional host CANN toolkit (the serving image carries its own CANN)."
    )
    vllm_ascend: VllmAscendStack = Field(default_factory=VllmAscendStack)
    allow_unsupported: bool = Field(
        False, description="Turn compatibility-matrix contradictions into warnings. Use with care."
    )
