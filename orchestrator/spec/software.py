"""OS, HDK driver/firmware, host CANN and the vllm-ascend stack."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, AnyUrl, Field, model_validator

from orchestrator.catalog.version import Version
from orchestrator.spec.common import SpecModel
from orchestrator.spec.container import ContainerRuntime

Sha256 = str


def _check_version(text: str) -> str:
    Version.parse(text)  # ValueError says what is wrong; the structural check reports it at the field
    return text


VersionText = Annotated[str, AfterValidator(_check_version)]
"""A version as Huawei or pip writes it (24.1.rc3, 7.8.0.2.212, v0.23.0rc1); anything else is an error."""


class PackageSource(SpecModel):
    """A package the controller ships to hosts: a controller-side path or a URL, always with its sha256."""

    version: VersionText = Field(
        description="Package version as Huawei names it, e.g. 25.5.1 (a driver) or 7.8.0.6.201 (the firmware "
        "released with it)."
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


class AscendDockerRuntime(PackageSource):
    """MindCluster's Ascend Docker Runtime .run package (Ascend-docker-runtime_<ver>_linux-<arch>.run),
    installed with `--install --install-scene=docker` (MindCluster's docs, https://github.com/Ascend/mind-cluster):
    an OCI runtime whose hook mounts the NPUs named in ASCEND_VISIBLE_DEVICES."""

    default_runtime: bool = Field(
        True,
        description="Make it Docker's default runtime (daemon.json default-runtime: ascend); false only "
        "registers it (containers ask for it with --runtime ascend).",
    )


class OperatingSystem(SpecModel):
    distro: Literal["ubuntu", "openeuler", "kylin", "debian"] = Field(
        description="Host OS distribution (debian: the simulated servers' OS only, with simulation)."
    )
    version: Literal["20.04", "22.04", "22.03", "24.03", "v10", "12"] = Field(
        description="ubuntu 20.04/22.04, openeuler 22.03/24.03, kylin v10; debian 12 only with simulation."
    )
    simulation: bool = Field(
        False,
        description="The servers are simulated (`orchestrator sim` writes it): allows the OS the catalog "
        "marks simulation-only (debian 12, the simulated servers' OS). Never set it for real servers.",
    )
    time_sync: Literal["required", "warn"] = Field(
        "required",
        description="Preflight: 'required' fails a server whose clock is not kept in sync (chrony, ntpd or "
        "systemd-timesyncd); 'warn' only reports it (servers that share a host's clock, e.g. containers).",
    )


class VllmAscendStack(SpecModel):
    """The serving stack. Everything but `version` is derived from the compatibility matrix."""

    version: VersionText = Field("v0.23.0", description="vllm-ascend release, e.g. v0.23.0.")
    vllm: VersionText | None = Field(None, description="Upstream vLLM tag (derived).")
    cann: VersionText | None = Field(None, description="CANN version of the base image (derived).")
    torch_npu: VersionText | None = Field(None, description="torch_npu version (derived).")
    python: VersionText | None = Field(None, description="Python in the image (derived).")
    soc_version: str | None = Field(None, description="SOC_VERSION build arg (derived from the chip).")


MAX_BATCH_SERVERS = 1_000_000  # far above any site (the loader caps a spec at 16 MiB by default)


def _check_batch(value: int | str) -> int | str:
    if isinstance(value, int) and 1 <= value <= MAX_BATCH_SERVERS:
        return value
    if isinstance(value, str) and re.fullmatch(r"(100|[1-9][0-9]?)%", value):
        return value
    raise ValueError(
        f"a batch is a number of servers (1 to {MAX_BATCH_SERVERS:,}) or a percentage from 1% to 100%, "
        "e.g. 25%"
    )


BatchSize = Annotated[int | str, AfterValidator(_check_batch)]


class RebootPolicy(SpecModel):
    """When the drivers phase may reboot a server, and how many at once."""

    policy: Literal["never", "allowed"] = Field(
        "never",
        description="'allowed': reboot a server when its driver or firmware installer says a reboot is "
        "needed, then wait for every NPU chip and verify the versions. 'never': stop with a message instead.",
    )
    batch_size: BatchSize = Field(
        "25%",
        description="NPU servers the drivers phase upgrades (and reboots) at a time, after one server alone "
        "first: a count or a percentage such as 25%.",
    )
    timeout_s: int = Field(
        1800, ge=120, le=14400, description="Seconds a reboot may take until every NPU chip is back."
    )


class DiskNeeds(SpecModel):
    """Free disk the preflight requires per server, when the defaults do not fit (small test hosts, images
    known to be larger)."""

    packages_gib: float | None = Field(
        None, gt=0, le=10000, description="GiB free for the HDK packages (default 4 on NPU servers)."
    )
    images_gib: float | None = Field(
        None,
        gt=0,
        le=100000,
        description="GiB free for container images (default 40 on NPU servers, 80 on the build host, 10 "
        "elsewhere).",
    )


class Software(SpecModel):
    driver: PackageSource = Field(description="HDK NPU driver .run package.")
    firmware: PackageSource = Field(description="HDK NPU firmware .run package.")
    cann: PackageSource | None = Field(
        None, description="Optional host CANN toolkit (the serving image carries its own CANN)."
    )
    vllm_ascend: VllmAscendStack = Field(default_factory=VllmAscendStack)
    container_runtime: ContainerRuntime = Field(default_factory=ContainerRuntime)
    allow_unsupported: bool = Field(
        False, description="Turn compatibility-matrix contradictions into warnings. Use with care."
    )
    kernel_headers: Literal["install", "provided"] = Field(
        "install",
        description="'install': the driver phase installs the running kernel's headers package (with dkms, "
        "gcc, make) from the OS repositories and stops when the repositories have none. 'provided': the "
        "headers are already there or the kernel is built elsewhere; nothing is installed or checked.",
    )
    reboot: RebootPolicy = Field(default_factory=RebootPolicy)
    disk: DiskNeeds = Field(default_factory=DiskNeeds)
    ascend_docker_runtime: AscendDockerRuntime | None = Field(
        None,
        description="Optional Ascend Docker Runtime (MindCluster) on the NPU servers; absent: containers get "
        "the NPUs as plain devices.",
    )
    stop_serving: bool = Field(
        False,
        description="Let the drivers phase stop the containers that hold NPU devices for an upgrade (and "
        "start them again after). False: the phase refuses to upgrade a server whose NPUs are in use.",
    )
