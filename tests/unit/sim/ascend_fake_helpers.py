"""Helpers for the fake Ascend host tool tests: a simulated host under a temp ASCEND_SIM_ROOT, tool runners,
and the verbatim samples of ascend-samples.md (tests/fixtures/reference/) copied into fake_samples/."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers import PATIENCE_S

REPO = Path(__file__).resolve().parents[3]
FAKES = REPO / "ascend_sim" / "payloads" / "sim-server" / "ascend_fakes"
SAMPLES = Path(__file__).resolve().parent / "fake_samples"
# the pinned verbatim samples (tests/fixtures/reference/README.md)
REFERENCE = REPO / "tests" / "fixtures" / "reference" / "ascend-samples.md"

# Profiles as `sim up` writes them (docs/simulator.md hardware.json); bus ids of samples 1a (910B4), 1b, 1c.
HW_910B4 = {
    "server": "node-1",
    "profile": "atlas-800t-a2",
    "chip": "910B4",
    "npu_smi_name": "910B4",
    "cards": 8,
    "devices_per_card": 1,
    "hbm_mb": 32768,
    "pci_device_id": "d802",
    "product": "Atlas 800I A2",
    "bus_ids": [f"0000:{b}:00.0" for b in ("C1", "C2", "81", "82", "01", "02", "41", "42")],
}
HW_A3 = {
    "server": "node-1",
    "profile": "atlas-800-a3",
    "chip": "910_93",
    "npu_smi_name": "Ascend910",
    "cards": 8,
    "devices_per_card": 2,
    "hbm_mb": 65536,
    "pci_device_id": "d803",
    "product": "Atlas 800T A3",
    "bus_ids": [f"0000:{0x9D - 4 * (i // 2) + 2 * (i % 2):02X}:00.0" for i in range(16)],
}
HW_310P = {
    "server": "node-1",
    "profile": "atlas-300i-duo",
    "chip": "310P3",
    "npu_smi_name": "310P3",
    "cards": 4,
    "devices_per_card": 2,
    "hbm_mb": [44216, 43757],
    "pci_device_id": "d500",
    "product": "Atlas 300I Duo",
    "npu_ids": [2, 3, 5, 6],
    "bus_ids": ["0000:01:00.0", "0000:03:00.0", "0000:81:00.0", "0000:84:00.0"],
}
PYTHON = os.path.realpath(sys.executable)  # the interpreter itself (no pyenv shim): fast start-up
PASSWD = "root:x:0:0:root:/root:/bin/bash\nHwHiAiUser:x:1000:1000::/home/HwHiAiUser:/bin/bash\n"
GROUP = "root:x:0:\nHwHiAiUser:x:1000:\n"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
STAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


def reference_blocks() -> list[str]:
    return re.findall(r"```(?:text)?\n(.*?)```", REFERENCE.read_text(encoding="utf-8"), flags=re.S)


def put(root: Path, path: str, content: Any) -> Path:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    text = content if isinstance(content, str) else json.dumps(content)
    target.write_text(text, encoding="utf-8")
    return target


def host(root: Path, hw: dict[str, Any], *, users: bool = True, server: str | None = None) -> Path:
    """A fresh simulated server (no driver): hardware.json, /etc/passwd and /etc/group."""
    put(root, "/var/lib/ascend-sim/hardware.json", dict(hw, server=server or hw["server"]))
    put(root, "/etc/passwd", PASSWD if users else "root:x:0:0:root:/root:/bin/bash\n")
    put(root, "/etc/group", GROUP if users else "root:x:0:\n")
    return root


def driver_loaded(root: Path, hw: dict[str, Any], version: str, *, fw_range: str = "[7.5.0,7.8.99]") -> Path:
    """A server whose driver is installed and up, without running a package (for the tool tests)."""
    host(root, hw)
    put(
        root,
        "/usr/local/Ascend/driver/version.info",
        f"Version={version}\ncompatible_version_fw={fw_range}\n",
    )
    put(
        root,
        "/etc/ascend_install.info",
        "UserName=HwHiAiUser\nUserGroup=HwHiAiUser\nDriver_Install_Status=complete\n",
    )
    count = hw["cards"] * hw["devices_per_card"]
    for name in [f"davinci{i}" for i in range(count)] + ["davinci_manager", "devmm_svm", "hisi_hdc"]:
        put(root, f"/dev/{name}", "")
    return root


def env(root: Path, **extra: str) -> dict[str, str]:
    """The tools' environment: the simulated root, no real lspci, and `python3` = this interpreter (the .run
    header runs `python3`), first on PATH through <root>/../.bin."""
    out = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_SIM_")}
    bindir = root.parent / ".bin"
    if not (bindir / "python3").exists():
        bindir.mkdir(parents=True, exist_ok=True)
        (bindir / "python3").symlink_to(PYTHON)
    out["PATH"] = f"{bindir}{os.pathsep}{out.get('PATH', '')}"
    out.update(ASCEND_SIM_ROOT=str(root), ASCEND_SIM_REAL_LSPCI="/nonexistent/lspci", LC_ALL="C.UTF-8")
    out.update(extra)
    return out


def tool(
    root: Path, script: str, *args: str, stdin: str = "", **extra: str
) -> subprocess.CompletedProcess[str]:
    """Run a fake (npu_smi.py, hccn_tool.py, ...) from the source tree against the simulated root."""
    return subprocess.run(
        [PYTHON, "-S", str(FAKES / script), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env(root, **extra),
        timeout=PATIENCE_S,
        check=False,
    )


def run_package(
    root: Path, package: Path, *args: str, stdin: str = "", **extra: str
) -> subprocess.CompletedProcess[str]:
    """Run a built .run file the way ascend-deployer does (`bash pkg.run ...`)."""
    return subprocess.run(
        ["bash", str(package), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env(root, **extra),
        timeout=PATIENCE_S,
        check=False,
    )


def plain(text: str) -> list[str]:
    """Console lines without ANSI colours and with timestamps replaced (for comparing with the samples)."""
    return [STAMP.sub("<ts>", ANSI.sub("", line)) for line in text.splitlines()]


def tabbed(text: str) -> str:
    """Samples that show npu-smi's leading TAB as 8 spaces (2a, 4a, 4b) -> the real TAB."""
    return "\n".join("\t" + line[8:] if line.startswith(" " * 8) else line for line in text.splitlines())


def telemetry_from_table(table: str, family: str, ids: list[int] | None = None) -> dict[str, dict[str, Any]]:
    """The live values (power, temperature, usage) a captured npu-smi table shows, per logical id, so the fake
    can be fed the same inputs as the real host had."""
    devices = table.split("Process id", maxsplit=1)[0].splitlines()
    rows = [line for line in devices if re.match(r"\| \d+ ", line) and "0000:" not in line]
    second = [line for line in devices if "| 0000:" in line]
    out: dict[str, dict[str, Any]] = {}
    for logic, (first, bus_row) in enumerate(zip(rows, second, strict=False)):
        cells = first.split("|")[3].split()
        power, temp, hp_used, hp_total = cells[0], int(cells[1]), int(cells[2]), int(cells[4])
        usage = re.findall(r"\d+", bus_row.split("|")[3])
        entry: dict[str, Any] = {"power": power, "temp": temp, "hugepages": [hp_used, hp_total]}
        entry["aicore"] = int(usage[0])
        if family == "310p":
            entry.update(memory_used=int(usage[1]), memory_total=int(usage[2]))
        else:
            entry.update(memory_used=int(usage[1]), memory_total=int(usage[2]), hbm_used=int(usage[3]))
        out[str(ids[logic] if ids else logic)] = entry
    return out
