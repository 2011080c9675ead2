"""The optional Ascend Docker Runtime (MindCluster) as role container_runtime reads it on the NPU servers
(group_vars/npu.yml): its package, and the engine's daemon.json with the runtime registered, and made the
default when the spec says so (github.com/Ascend/mind-cluster component/ascend-docker-runtime: install path
/usr/local/Ascend/Ascend-Docker-Runtime; daemon.json runtimes.ascend.path + default-runtime)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from orchestrator.spec.site import SiteSpec
from orchestrator.spec.software import PackageSource

INSTALL_DIR = "/usr/local/Ascend/Ascend-Docker-Runtime"
RUNTIME = f"{INSTALL_DIR}/ascend-docker-runtime"


def ascend_runtime_vars(
    spec: SiteSpec, daemon: Mapping[str, Any], package: Callable[[PackageSource], dict[str, Any]]
) -> dict[str, Any]:
    """container_runtime_ascend (null when the spec has none) and, with it, the NPU servers' daemon.json:
    `daemon` (every engine's) plus runtimes.ascend [+ default-runtime]."""
    adr = spec.software.ascend_docker_runtime
    if adr is None:
        return {"container_runtime_ascend": None}
    merged = {**daemon, "runtimes": {"ascend": {"path": RUNTIME, "runtimeArgs": []}}}
    if adr.default_runtime:
        merged["default-runtime"] = "ascend"
    return {
        "container_runtime_ascend": {
            "package": package(adr),
            "install_dir": INSTALL_DIR,
            "runtime": RUNTIME,
            "default_runtime": adr.default_runtime,
        },
        "container_runtime_daemon_config": merged,
    }
