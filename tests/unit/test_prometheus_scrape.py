"""The real Prometheus server (Debian's package, beside promtool) with the rendered `node` job scrapes what
`orchestrator drift --textfile` writes, as node_exporter's textfile collector serves it: the drift series
keep their own `host` (the checked server) because the job has honor_labels: true, and the run-level series
get the target's host. A control job with Prometheus's default (honor_labels: false) shows the difference:
there the checked server is moved to `exported_host`.

The exporter is a local HTTP server that serves the textfile's text (node_exporter adds its own series to
it, which change nothing here). No Docker; Prometheus runs on 127.0.0.1 for a few seconds.
"""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from orchestrator.drift.outputs_prometheus import registry_for, textfile_text
from orchestrator.drift.report import build_report
from tests.helpers import PATIENCE_S
from tests.prometheus_config import site_vars, write_config
from tests.promtool import prometheus
from tests.unit.drift.drift_runs import drift_run

FINISHED = datetime(2026, 12, 5, 1, 0, tzinfo=UTC)
TEXT = textfile_text(registry_for(build_report(drift_run(), seconds=1.5, finished=FINISHED)))


class _Metrics(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = TEXT.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def exporter() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Metrics)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _query(base: str, expr: str) -> list[dict[str, Any]]:
    url = f"{base}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
    with urllib.request.urlopen(url, timeout=5) as resp:
        data = json.load(resp)
    result: list[dict[str, Any]] = data["data"]["result"]
    return result


def _wait(base: str, expr: str, count: int, proc: subprocess.Popen[str]) -> list[dict[str, Any]]:
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else "prometheus exited"
        try:
            found = _query(base, expr)
        except OSError:
            found = []
        if len(found) >= count:
            return found
        time.sleep(0.5)
    raise AssertionError(f"Prometheus did not return {count} series for {expr} within {PATIENCE_S:g} s")


def test_the_node_job_keeps_the_drift_textfiles_host_label(tmp_path: Path, exporter: str) -> None:
    # a scrape timeout of seconds, not 1 s: the exporter runs in this (nice 19, on CI) test process, and a
    # scrape that times out while it waits for a CPU would leave no samples behind
    variables = site_vars("a2-fleet-gateway", monitoring_scrape_interval_s=5, monitoring_scrape_timeout_s=5)
    node = next(j for j in variables["monitoring_scrape_jobs"] if j["name"] == "node")
    assert node["honor_labels"] is True
    target = [{"address": exporter, "labels": {"host": "edge-01"}}]
    control = {**node, "name": "control", "honor_labels": False, "targets": target}
    variables["monitoring_scrape_jobs"] = [{**node, "targets": target}, control]
    config = write_config(tmp_path, variables)
    port = _free_port()
    proc = subprocess.Popen(
        [
            prometheus(),
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        drift = _wait(base, 'orchestrator_drift{job="node"} == 1', 2, proc)
        assert sorted((s["metric"]["host"], s["metric"]["phase"]) for s in drift) == [
            ("a2-01", "drivers"),
            ("a2-02", "host"),
        ]
        assert all("exported_host" not in s["metric"] for s in drift)
        run = _wait(base, 'orchestrator_drift_last_run_exit_code{job="node"}', 1, proc)
        assert [(s["metric"]["host"], s["metric"]["site"], s["value"][1]) for s in run] == [
            ("edge-01", "a2-fleet", "3")
        ]
        moved = _wait(base, 'orchestrator_drift{job="control"} == 1', 2, proc)
        assert sorted((s["metric"]["host"], s["metric"]["exported_host"]) for s in moved) == [
            ("edge-01", "a2-01"),
            ("edge-01", "a2-02"),
        ]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=PATIENCE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
