"""The container engine on every host that runs containers (NPU servers, build, gateway, monitoring)."""

from __future__ import annotations

from pydantic import Field

from orchestrator.spec.common import SpecModel


class ContainerRuntime(SpecModel):
    """Docker engine settings written to /etc/docker/daemon.json by the container_runtime role."""

    data_root: str | None = Field(
        None,
        pattern=r"^/",
        description="Docker's data-root (images, containers); e.g. a large /data volume. Default: Docker's "
        "own (/var/lib/docker).",
    )
    log_max_size: str = Field(
        "100m",
        pattern=r"^[1-9][0-9]*[kmg]$",
        description="json-file log rotation: size of one container log file before it rotates (e.g. 100m).",
    )
    log_max_files: int = Field(
        5, ge=1, le=100, description="json-file log rotation: files kept per container."
    )
    live_restore: bool = Field(
        True,
        description="Keep containers running while dockerd restarts (an engine upgrade or config change).",
    )
