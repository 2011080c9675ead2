#!/usr/bin/env python3
"""Fake MindCluster npu-exporter (binary mode), the `npu-exporter` of the simulator's npu-exporter zip
(ascend_sim/npu_exporter_package.py): an HTTP server on `-ip`:`-port` whose /metrics serves the
npu_chip_info_* gauges of every simulated chip from the device state the fake npu-smi reads (hardware.json,
faults.json: `sim fault npu-unhealthy` / `link-down`). python3 standard library only.

Wire format as npu-exporter's (github.com/Ascend/mind-cluster
docs/en/scheduling/api/npu_exporter/01_prometheus_metrics_api.md): `# HELP` / `# TYPE <name> gauge`, the
label set container_name,id,model_name,namespace,pcie_bus_info,pod_name,vdie_id, and a millisecond timestamp
on every sample. HELP texts and values from MindCluster's npu-exporter code
(component/npu-exporter/collector, BuildDesc calls): health_status 1 healthy / 0 unhealthy (any non-OK
npu-smi health), link_status 1 UP / 0 DOWN.
Flags as the real binary's (cmd/npu-exporter/main.go): -ip (required), -port (default 8082, 1025-40000),
-logFile; others are accepted and ignored.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

_HERE = os.path.dirname(os.path.realpath(__file__))
sys.path[:0] = [_HERE, "/opt/ascend-sim/fakes"]
if TYPE_CHECKING:
    from ascend_fakes import simstate
else:
    import simstate

LABELS = ("container_name", "id", "model_name", "namespace", "pcie_bus_info", "pod_name", "vdie_id")
# (name, HELP) of the gauges served, per chip
GAUGES = (
    ("npu_chip_info_health_status", "the npu health status"),
    ("npu_chip_info_link_status", "the npu link status"),
    ("npu_chip_info_hbm_total_memory", "the npu hbm total memory"),
    ("npu_chip_info_hbm_used_memory", "the npu hbm used memory"),
)


def _value(name: str, dev: simstate.Device) -> int:
    if name == "npu_chip_info_health_status":
        return 1 if simstate.health(dev.logic_id) == "OK" else 0
    if name == "npu_chip_info_link_status":
        return 1 if simstate.link_up(dev.logic_id) else 0
    if name == "npu_chip_info_hbm_total_memory":
        return dev.hbm_mb
    return int(simstate.telemetry(dev.logic_id).get("hbm_used") or 0)


def _labels(hw: simstate.Hardware, dev: simstate.Device) -> str:
    values = {
        "container_name": "",
        "id": str(dev.logic_id),
        "model_name": f"Ascend{hw.npu_smi_name}",
        "namespace": "",
        "pcie_bus_info": dev.bus_id,
        "pod_name": "",
        "vdie_id": "",
    }
    return ",".join(f'{k}="{values[k]}"' for k in LABELS)


def metrics_text() -> str:
    hw = simstate.load_hardware()
    devices = hw.devices if hw else []
    stamp = int(time.time() * 1000)
    out = [
        "# HELP machine_npu_nums Amount of npu installed on the machine.",
        "# TYPE machine_npu_nums gauge",
        f"machine_npu_nums {len(devices)}",
    ]
    for name, help_text in GAUGES:
        out += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
        out += [f"{name}{{{_labels(hw, d)}}} {_value(name, d)} {stamp}" for d in devices if hw]
    return "\n".join(out) + "\n"


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.split("?")[0] != "/metrics":
            self.send_error(404)
            return
        body = metrics_text().encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


def hold_device_nodes() -> list[int]:
    """The real exporter holds the NPUs through DCMI while it runs (open file descriptors on /dev/davinci*
    and davinci_manager), which is what makes the driver installer refuse an upgrade beside it."""
    held: list[int] = []
    try:
        names = sorted(os.listdir(simstate.p("/dev")))
    except OSError:  # no device nodes (no driver yet): nothing to hold
        return held
    for name in names:
        if name == "davinci_manager" or (name.startswith("davinci") and name[7:].isdigit()):
            try:
                held.append(os.open(simstate.p(f"/dev/{name}"), os.O_RDONLY))
            except OSError:
                continue
    return held


def main(argv: list[str]) -> int:
    # Go's flag package takes -name value and -name=value, which argparse's single-dash options also take.
    ap = argparse.ArgumentParser(prog="npu-exporter", allow_abbrev=False)
    ap.add_argument("-ip", required=True)
    ap.add_argument("-port", type=int, default=8082)
    ap.add_argument("-logFile", default="/var/log/mindx-dl/npu-exporter/npu-exporter.log")
    args, _ignored = ap.parse_known_args(argv)
    if not 1025 <= args.port <= 40000:
        print(f"the port is invalid: {args.port} (1025-40000)", file=sys.stderr)
        return 2
    held = hold_device_nodes()
    with open(args.logFile, "a", encoding="utf-8") as log:
        log.write(f"npu-exporter (simulated) listening on {args.ip}:{args.port}\n")
    try:
        ThreadingHTTPServer((args.ip, args.port), Handler).serve_forever()
    finally:
        for fd in held:
            os.close(fd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
