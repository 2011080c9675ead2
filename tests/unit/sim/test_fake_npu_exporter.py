"""The simulator's npu-exporter zip (ascend_sim/npu_exporter_package.py) and the fake exporter in it:
the zip is reproducible and holds an executable `npu-exporter` at its top, which takes the real binary's
flags (-ip, -port, -logFile) and serves, per simulated chip, gauges in npu-exporter's wire format: the label
set of the pinned upstream sample (ascend-samples.md section 8), a millisecond timestamp on every sample,
health 0 for a chip `sim fault npu-unhealthy` marked and link 0 for a `link-down` one."""

from __future__ import annotations

import os
import re
import socket
import stat
import subprocess
import time
import urllib.request
import zipfile
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from ascend_sim.npu_exporter_package import build_npu_exporter_package
from tests.helpers import PATIENCE_S
from tests.unit.sim.ascend_fake_helpers import FAKES, HW_910B4, PYTHON, REFERENCE, env, host, put


def _reference_labels() -> list[str]:
    text = REFERENCE.read_text(encoding="utf-8")
    section = text[text.index("## 8. npu-exporter") :]
    line = next(x for x in section.splitlines() if x.startswith("npu_chip_info_aicore_current_freq{"))
    return re.findall(r'(\w+)="', line)


def _free_port() -> int:
    """A free port in npu-exporter's range (1025-40000; the kernel's ephemeral ports lie above it)."""
    for port in range(20000 + os.getpid() % 10000, 40001):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free port in 20000-40000")


def _scrape(url: str) -> str:
    deadline = time.monotonic() + PATIENCE_S
    while True:
        try:
            with urllib.request.urlopen(url, timeout=PATIENCE_S) as resp:
                return str(resp.read().decode())
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_the_zip_is_reproducible_and_holds_the_binary(tmp_path: Path) -> None:
    a = build_npu_exporter_package(tmp_path / "a", arch="aarch64")
    b = build_npu_exporter_package(tmp_path / "b", arch="aarch64")
    assert a.name == "Ascend-mindxdl-npu-exporter_7.1.0_linux-aarch64.zip"
    assert a.read_bytes() == b.read_bytes()
    with zipfile.ZipFile(a) as zf:
        (info,) = zf.infolist()
        assert info.filename == "npu-exporter"
        assert stat.S_IMODE(info.external_attr >> 16) == 0o755


def test_the_exporter_serves_every_chip_and_the_faults(tmp_path: Path) -> None:
    root = host(tmp_path / "host", HW_910B4)
    put(root, "/var/lib/ascend-sim/faults.json", {"npu_unhealthy": [3], "link_down": [5]})
    for node in ("davinci0", "davinci7", "davinci_manager", "davinci.conf"):  # the last is no device node
        put(root, f"/dev/{node}", "")
    with zipfile.ZipFile(build_npu_exporter_package(tmp_path / "pkg", arch="aarch64")) as zf:
        zf.extractall(tmp_path / "bin")
    port = _free_port()
    log = tmp_path / "npu-exporter.log"
    argv = [
        PYTHON,
        str(tmp_path / "bin" / "npu-exporter"),
        "-ip=127.0.0.1",
        f"-port={port}",
        f"-logFile={log}",
    ]
    # the fakes' folder stands in for the server image's /opt/ascend-sim/fakes (simstate.py)
    proc = subprocess.Popen(
        argv, env=env(root, PYTHONPATH=str(FAKES)), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        text = _scrape(f"http://127.0.0.1:{port}/metrics")
        # it holds the device nodes while it runs, as the real one's DCMI handles do (the driver installer
        # refuses to upgrade beside it)
        links = [os.readlink(fd) for fd in Path(f"/proc/{proc.pid}/fd").iterdir()]
        held = sorted(link.rsplit("/", 1)[1] for link in links if link.startswith(f"{root}/dev/"))
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=PATIENCE_S)
    assert b"Traceback" not in err, err.decode()
    assert held == ["davinci0", "davinci7", "davinci_manager"]
    assert "# TYPE npu_chip_info_health_status gauge" in text
    samples = [line for line in text.splitlines() if line.startswith("npu_chip_info_health_status{")]
    assert len(samples) == 8 and all(re.search(r"\} [01] \d{13}$", s) for s in samples)
    assert re.findall(r'(\w+)="', samples[0]) == _reference_labels()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    health = {s.labels["id"]: s.value for s in families["npu_chip_info_health_status"].samples}
    link = {s.labels["id"]: s.value for s in families["npu_chip_info_link_status"].samples}
    assert health == {str(i): (0.0 if i == 3 else 1.0) for i in range(8)}
    assert link == {str(i): (0.0 if i == 5 else 1.0) for i in range(8)}
    assert families["machine_npu_nums"].samples[0].value == 8
    assert log.read_text().startswith("npu-exporter (simulated) listening on 127.0.0.1:")
