"""What the preflight role checks on each server: the plan's expectations, rendered as they are.

- OS: the spec's distro/version, compared by the role with the host's /etc/os-release (ID, VERSION_ID,
  case-insensitive: openEuler / openeuler, V10 / v10); the kernel line the catalog gives for that release
  (kernels.yaml): the running kernel must be that line or newer (HWE / vendor kernels).
- Architecture: the server profile's (profiles.<p>.arch; validation already holds the driver package's file
  name to it), per NPU server.
- NPUs on the PCI bus: vendor 0x19e5 and the chip's device id (catalog pci_device_id); one PCI function per
  card, except the A3 (910_93) whose two dies are two functions (PCI device id d803 per die).
- Disk: minimum free space per path, for the HDK packages, container images and model weights.
"""

from __future__ import annotations

from orchestrator.catalog import get_chip
from orchestrator.catalog.kernels import os_kernel
from orchestrator.planning.model import DiskNeed, HostPlan, PreflightNpu, PreflightOs
from orchestrator.spec.site import SiteSpec

PACKAGE_CACHE = "/var/cache/ascend-orchestrator/packages"
"""Where the driver and firmware roles keep the verified .run files on the host."""
DOCKER_ROOT = "/var/lib/docker"
# Sizes (GiB). An HDK driver .run is ~0.3-0.5 GB and a firmware ~0.2 GB (the packages' "Uncompressing
# ... 100%" console lines); the cache keeps one pair plus the next version's and the installers' extraction
# room.
PACKAGES_GIB = 4.0
# A vllm-ascend image is CANN + torch_npu + vLLM (tens of GB unpacked, vllm-ascend's Dockerfile): room for
# the running image and the next one. The build host also holds the base image and the build cache.
IMAGES_GIB = {"npu": 40.0, "build": 80.0, "other": 10.0}
WEIGHTS_MARGIN = 1.05  # safetensors index, config and tokenizer files beside the shards
PCI_VENDOR_ID = "19e5"  # Huawei


def pci_functions(spec: SiteSpec, host: HostPlan) -> int:
    """PCI functions with the chip's device id the host must show (lspci -d 19e5:<id>)."""
    if host.profile is None or host.chip is None:
        return 0
    if get_chip(host.chip).family == "910_93":
        return host.devices
    return spec.profiles[host.profile].cards


def preflight_npu(spec: SiteSpec, host: HostPlan) -> PreflightNpu | None:
    """The NPUs an NPU server's PCI bus must show; None for a server without a profile."""
    if host.chip is None or host.profile is None:
        return None
    return PreflightNpu(
        chip=host.chip,
        arch=spec.profiles[host.profile].arch,
        pci_vendor_id=PCI_VENDOR_ID,
        pci_device_id=get_chip(host.chip).pci_device_id,
        pci_functions=pci_functions(spec, host),
    )


def disk_needs(spec: SiteSpec, host: HostPlan, weights_gib: float, model_name: str) -> tuple[DiskNeed, ...]:
    needs: list[DiskNeed] = []
    disk = spec.software.disk
    if "npu" in host.roles:
        gib = disk.packages_gib or PACKAGES_GIB
        needs.append(DiskNeed(PACKAGE_CACHE, "HDK driver and firmware packages", gib, True))
    kind = "build" if "build" in host.roles else "npu" if "npu" in host.roles else "other"
    needs.append(DiskNeed(DOCKER_ROOT, "container images", disk.images_gib or IMAGES_GIB[kind], False))
    if "npu" in host.roles:
        gib = round(weights_gib * WEIGHTS_MARGIN + 0.05, 1)
        needs.append(DiskNeed(spec.model.weights_path, f"model weights ({model_name})", gib, True))
    return tuple(needs)


def preflight_site(spec: SiteSpec) -> PreflightOs:
    """Site-wide expectations (group_vars/all.yml preflight_os)."""
    return PreflightOs(
        distro=spec.os.distro,
        version=spec.os.version,
        kernel_line=os_kernel(spec.os.distro, spec.os.version),
        time_sync=spec.os.time_sync,
    )
