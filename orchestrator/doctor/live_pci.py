"""Live check `npu-pci`: the NPUs the kernel sees on the PCI bus against what npu-smi shows (cards on the
bus but npu-smi failing = the driver is not loaded).

PCI functions come from sysfs (/sys/bus/pci/devices/*/vendor == 0x19e5, device == the chip's id in the
catalog, e.g. 0xd802 for 910B), never from `lspci | grep`: sysfs needs no pciutils and no device-name table.
"""

from __future__ import annotations

from orchestrator.catalog import get_chip
from orchestrator.doctor.live_finding import Facts, Finding, LiveCheck, Status, driver_loaded, expect, npu

NAME = "npu-pci"
FIX_DRIVER = (
    "load the NPU driver: run `orchestrator apply SITE --phases drivers` (installs it and reboots when the "
    "spec allows), or reboot the host when an install is waiting for one; then `npu-smi info` must list "
    "every NPU"
)


def _device_id(chip: str) -> str | None:
    try:
        return "0x" + get_chip(chip).pci_device_id
    except KeyError:
        return None


def check(host: str, facts: Facts) -> list[Finding]:
    exp, got = expect(facts), npu(facts)
    if got.get("failed") or not got:
        why = got.get("msg") or "no facts"
        return [
            Finding(
                host, NAME, Status.fail, f"reading the NPU state failed: {why}", "read the message; rerun"
            )
        ]
    functions = [f for f in got.get("pci_functions") or [] if isinstance(f, dict)]
    want_id = _device_id(str(exp.get("chip") or ""))
    ours = [f for f in functions if want_id is None or str(f.get("device")) == want_id]
    wanted = exp.get("devices")
    seen = f"{len(ours)} PCI functions of {exp.get('chip') or 'an NPU'} (vendor 0x19e5 device {want_id})"
    if not ours:
        return [
            Finding(
                host,
                NAME,
                Status.fail,
                f"no NPU on the PCI bus: {seen}",
                "check the cards are seated and powered and enabled in the BIOS (lspci -d 19e5: lists them); "
                "the spec's chip must be the one installed",
            )
        ]
    smi = got.get("npu_smi") or {}
    if not driver_loaded(facts):
        error = smi.get("error") or "npu-smi is not installed"
        return [Finding(host, NAME, Status.fail, f"{seen}, but npu-smi info fails: {error}", FIX_DRIVER)]
    chips = [c for c in got.get("chips") or [] if isinstance(c, dict)]
    if isinstance(wanted, int) and len(chips) < wanted:
        return [
            Finding(
                host,
                NAME,
                Status.fail,
                f"{seen}; npu-smi shows {len(chips)} chips, the spec places {wanted}",
                "a chip is missing from npu-smi: read `dmesg | grep -i davinci` on the host, reboot it, and "
                "replace the card if it stays missing; or lower the server's device count in the spec",
            )
        ]
    return [Finding(host, NAME, Status.ok, f"{seen}; npu-smi shows {len(chips)} chips")]


CHECK = LiveCheck(
    NAME,
    "NPUs on the PCI bus (sysfs) vs `npu-smi info`: is the driver loaded, does it see every chip",
    FIX_DRIVER,
    check,
)
