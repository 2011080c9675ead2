"""The spec's `drift.outputs`: where each drift report goes besides stdout and the run folder.

- file: the JSON report as <path>/<site>/<run id>.json and <path>/<site>/latest.json (replaced atomically);
  a relative path is taken from the project root (where `.orchestrator/` lives).
- webhook: the JSON report POSTed (Content-Type: application/json) to the URL the reference names
  (`env:NAME` or `file:PATH`, a relative PATH from the spec's folder). The URL may hold a token: it is
  never printed, logged or written; a failed delivery names the output by its index and the reason.

A failed delivery is a warning on stderr; it never changes the drift verdict or the exit code.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.spec.operations import DriftOutput
from orchestrator.validation.controller import resolve_secret

WEBHOOK_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Delivery:
    output: str  # "drift.outputs[0] (file drift-reports)", never a webhook URL
    ok: bool
    detail: str  # where it went, or why it did not


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _to_file(label: str, out: DriftOutput, text: str, root: Path, site: str, run_id: str) -> Delivery:
    base = Path(str(out.path))
    folder = (base if base.is_absolute() else root / base) / site
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _write(folder / f"{run_id}.json", text)
        _write(folder / "latest.json", text)
    except OSError as exc:
        return Delivery(label, False, f"cannot write into {folder}: {exc.strerror or exc}")
    return Delivery(label, True, str(folder / f"{run_id}.json"))


def _url(ref: str, spec_dir: Path) -> str:
    """The webhook URL its reference resolves to (LookupError, with the reason, when it does not)."""
    return resolve_secret(ref, spec_dir)


def _to_webhook(label: str, out: DriftOutput, text: str, spec_dir: Path, timeout_s: float) -> Delivery:
    try:
        url = _url(str(out.url), spec_dir)
    except LookupError as exc:
        return Delivery(label, False, f"no webhook URL: {exc}")
    if not url.startswith(("http://", "https://")):
        return Delivery(label, False, "the webhook URL does not start with http:// or https://")
    req = urllib.request.Request(
        url, data=text.encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            status = resp.status
    except urllib.error.HTTPError as exc:
        return Delivery(label, False, f"the webhook answered HTTP {exc.code}")
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return Delivery(label, False, f"the webhook could not be reached ({type(exc).__name__}: {reason})")
    return Delivery(label, True, f"the webhook answered HTTP {status}")


def deliver(
    text: str,
    outputs: Sequence[DriftOutput],
    *,
    root: Path,
    spec_dir: Path,
    site: str,
    run_id: str,
    timeout_s: float = WEBHOOK_TIMEOUT_S,
) -> list[Delivery]:
    """Send the JSON report `text` to every output; one Delivery per output, in spec order."""
    done = []
    for i, out in enumerate(outputs):
        label = f"drift.outputs[{i}] ({out.type}{' ' + str(out.path) if out.type == 'file' else ''})"
        if out.type == "file":
            done.append(_to_file(label, out, text, root, site, run_id))
        else:
            done.append(_to_webhook(label, out, text, spec_dir, timeout_s))
    return done
