"""A prefill/decode site with the serve phase selected is refused before any host is contacted: this release
plans and renders PD sites, but its serve role starts no PD instance, so apply, plan, drift and rollback
would report a serve phase that served or checked nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import copy_ready_site, run_cli


@pytest.mark.parametrize(
    "argv",
    [
        ("apply", "--yes"),
        ("apply", "--check", "--phases", "serve"),
        ("plan",),
        ("drift",),
        ("rollback", "--yes"),
    ],
)
def test_the_serve_phase_of_a_pd_site_is_refused_before_any_host(
    tmp_path: Path, argv: tuple[str, ...]
) -> None:
    root = copy_ready_site(tmp_path, "a3-pd-r1-w8a8")
    out = run_cli(argv[0], "a3-pd-r1-w8a8", *argv[1:], cwd=root)
    text = " ".join(out.stderr.split())
    assert out.returncode == 64, (argv, out.stdout[-2000:], out.stderr[-2000:])
    assert "refusing to run: this is a prefill/decode site" in text and "no host was touched" in text, text
    assert "Fix: select the other phases, e.g. --phases preflight,drivers,host,network,image,weights" in text
    assert "Traceback" not in out.stderr
    assert not (root / ".orchestrator" / "runs").exists()  # no run was started
