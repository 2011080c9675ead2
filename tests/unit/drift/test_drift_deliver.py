"""drift.outputs: the JSON report lands in the file output's folder and reaches a webhook (a real HTTP
server on 127.0.0.1); the webhook URL, which may carry a token, never shows in what is printed."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from orchestrator.drift.deliver import deliver
from orchestrator.spec.operations import DriftOutput

TOKEN = "s3cr3t-t0ken"
REPORT = json.dumps({"site": "s1", "run_id": "r1", "verdict": "drift", "exit_code": 3}) + "\n"


class Hook:
    """A webhook receiver: answers `status`, keeps each POST's path, content type and body."""

    def __init__(self) -> None:
        self.status = 204
        self.posts: list[tuple[str, str, bytes]] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                hook.posts.append((self.path, self.headers.get("Content-Type", ""), body))
                self.send_response(hook.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook/{TOKEN}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def hook() -> Iterator[Hook]:
    h = Hook()
    yield h
    h.server.shutdown()
    h.server.server_close()


def test_file_output_keeps_each_run_and_the_latest(tmp_path: Path) -> None:
    outs = [
        DriftOutput(type="file", path="drift-reports"),
        DriftOutput(type="file", path=str(tmp_path / "abs")),
    ]
    done = deliver(REPORT, outs, root=tmp_path / "root", spec_dir=tmp_path, site="s1", run_id="r1")
    assert [d.ok for d in done] == [True, True], done
    for folder in (tmp_path / "root" / "drift-reports" / "s1", tmp_path / "abs" / "s1"):
        assert (folder / "r1.json").read_text() == REPORT == (folder / "latest.json").read_text()
    deliver(
        REPORT.replace("r1", "r2"),
        outs[:1],
        root=tmp_path / "root",
        spec_dir=tmp_path,
        site="s1",
        run_id="r2",
    )
    folder = tmp_path / "root" / "drift-reports" / "s1"
    assert sorted(p.name for p in folder.iterdir()) == ["latest.json", "r1.json", "r2.json"]
    assert json.loads((folder / "latest.json").read_text())["run_id"] == "r2"


def test_webhook_gets_the_json_and_its_url_is_never_shown(
    tmp_path: Path, hook: Hook, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DRIFT_HOOK", hook.url)
    (tmp_path / "hook-url").write_text(hook.url + "\n")
    outs = [
        DriftOutput(type="webhook", url="env:DRIFT_HOOK"),
        DriftOutput(type="webhook", url="file:hook-url"),
    ]
    done = deliver(REPORT, outs, root=tmp_path, spec_dir=tmp_path, site="s1", run_id="r1")
    assert [d.ok for d in done] == [True, True], done
    assert hook.posts == [(f"/hook/{TOKEN}", "application/json", REPORT.encode())] * 2
    hook.status = 500
    (failed,) = deliver(REPORT, outs[:1], root=tmp_path, spec_dir=tmp_path, site="s1", run_id="r1")
    assert (failed.ok, failed.detail) == (False, "the webhook answered HTTP 500")
    hook.server.shutdown()
    hook.server.server_close()
    (gone,) = deliver(REPORT, outs[:1], root=tmp_path, spec_dir=tmp_path, site="s1", run_id="r1", timeout_s=2)
    assert not gone.ok and gone.detail.startswith("the webhook could not be reached"), gone
    for d in (*done, failed, gone):
        assert TOKEN not in f"{d.output} {d.detail}" and "127.0.0.1" not in d.detail


def test_missing_webhook_references_say_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_SUCH_HOOK", raising=False)
    monkeypatch.setenv("NOT_A_URL", f"ftp://example.invalid/{TOKEN}")
    outs = [
        DriftOutput(type="webhook", url="env:NO_SUCH_HOOK"),
        DriftOutput(type="webhook", url="file:missing-url"),
        DriftOutput(type="webhook", url="env:NOT_A_URL"),
    ]
    done = deliver(REPORT, outs, root=tmp_path, spec_dir=tmp_path, site="s1", run_id="r1")
    assert [(d.output, d.ok) for d in done] == [
        ("drift.outputs[0] (webhook)", False),
        ("drift.outputs[1] (webhook)", False),
        ("drift.outputs[2] (webhook)", False),
    ]
    assert (
        done[0].detail == "no webhook URL: the environment variable NO_SUCH_HOOK is not set on the controller"
    )
    assert done[1].detail.startswith(f"no webhook URL: {tmp_path / 'missing-url'} cannot be read")
    assert done[2].detail == "the webhook URL does not start with http:// or https://"
    assert all(TOKEN not in d.detail for d in done)
