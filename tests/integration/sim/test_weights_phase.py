"""Phase weights (role model_weights) on a simulated cluster of 3 servers, from the controller path the
simulator's spec points at (with the checkpoint's manifest and its sha256 in the spec):

- converge: every server holds the checkpoint (sha256sum on the server == hashlib on the controller) and
  the fact; the controller seeded one server, the other two were copied server-to-server (the seed's rsync
  daemon log names their addresses; no daemon is left running);
- a second apply and check mode after it change nothing;
- a corrupted shard behind an unchanged mtime: the fast path does not read it, `--verify-weights` does -
  with repair off the phase fails naming server and file, with repair on the file is moved aside (kept)
  and copied again before serving;
- check mode names the server that lost a shard and copies nothing; a copy cut mid-file (rsync killed
  under a bandwidth limit) continues on the next apply: the seed's log shows fewer bytes sent for that
  file than its size."""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.sim.sim_helpers import (
    ANSIBLE_ENV,
    BIN,
    REPO,
    Sim,
    ansible_playbook,
    module_cluster,
    site_config,
)

pytestmark = pytest.mark.integration

SERVERS = ["a2-01", "a2-02", "a2-03"]
WEIGHTS = "/data/models/sim-deepseek-tiny"
FACT = "/etc/ansible/facts.d/model_weights.fact"
LOG = "/var/log/model-weights-rsyncd.log"
SHARD = "model-00001-of-00002.safetensors"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from module_cluster(tmp_path_factory, "itw", "--nodes", "3", "--no-image-base")


def apply(sim: Sim, *args: str) -> tuple[int, dict[str, Any]]:
    proc = sim.cli("apply", sim.name, "--phases", "weights", "--yes", "--format", "json", *args, check=False)
    return proc.returncode, json.loads(proc.stdout)


def changed(out: dict[str, Any]) -> dict[str, int]:
    return {h: c["changed"] for h, c in out["phases"][0]["hosts"].items()}


def source_dir(sim: Sim) -> Path:
    return sim.state_dir / "model" / "sim-deepseek-tiny"


def controller_hashes(sim: Sim) -> dict[str, str]:
    root = source_dir(sim)
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def server_hashes(sim: Sim, server: str) -> dict[str, str]:
    out = sim.exec(server, f"cd {WEIGHTS} && find . -type f ! -name '*.mismatch-*' | xargs sha256sum")
    return {line.split()[1][2:]: line.split()[0] for line in out.splitlines() if line.strip()}


def fact(sim: Sim, server: str) -> dict[str, Any]:
    for _ in range(3):  # on a loaded machine a docker exec has come back with no output at all
        text = sim.exec(server, f"cat {FACT}")
        if text.strip():
            break
        time.sleep(2)
    data: dict[str, Any] = json.loads(text)
    return data


def address(sim: Sim, server: str) -> str:
    servers = json.loads((sim.state_dir / "cluster.json").read_text())["servers"]
    return next(str(s["address"]) for s in servers if s["name"] == server)


def rsync_running(sim: Sim, server: str) -> bool:
    out = sim.exec(server, "cat /proc/[0-9]*/comm 2>/dev/null")
    return "rsync" in out.split()


def test_converge_copies_by_fanout_and_writes_the_fact(cluster: Sim) -> None:
    rc, out = apply(cluster)
    assert rc == 0, out["failures"]
    want = controller_hashes(cluster)
    manifest = (source_dir(cluster) / "weights.manifest.json").read_bytes()
    listed = {k: v for k, v in want.items() if k != "weights.manifest.json"}
    for server in SERVERS:
        assert server_hashes(cluster, server) == want, server
        f = fact(cluster, server)
        assert f["manifest_sha256"] == hashlib.sha256(manifest).hexdigest()
        assert f["path"] == WEIGHTS and f["files"] == len(listed)
        assert f["bytes"] == sum((source_dir(cluster) / p).stat().st_size for p in listed)
        assert f["read_mib_s"] > 0 and f["verified"].endswith("Z")
        assert not rsync_running(cluster, server)  # every daemon torn down
    sources = {s: fact(cluster, s)["source"] for s in SERVERS}
    assert sources == {"a2-01": "controller", "a2-02": "a2-01", "a2-03": "a2-01"}
    log = cluster.exec("a2-01", f"cat {LOG}")
    for peer in ("a2-02", "a2-03"):  # server-to-server: the seed's daemon sent the shards to each peer
        assert f"send {address(cluster, peer)} {SHARD} " in log, log


def test_second_apply_and_check_mode_change_nothing(cluster: Sim) -> None:
    rc, out = apply(cluster)
    assert rc == 0 and changed(out) == dict.fromkeys(SERVERS, 0), out
    rc, out = apply(cluster, "--check")
    assert rc == 0 and changed(out) == dict.fromkeys(SERVERS, 0), out


def corrupt_keeping_mtime(sim: Sim, server: str) -> None:
    path = f"{WEIGHTS}/{SHARD}"
    sim.exec(
        server,
        f"t=$(stat -c %y {path}); printf 'X' | dd of={path} bs=1 seek=4096 conv=notrunc 2>/dev/null; "
        f'touch -d "$t" {path}',
    )


def test_corrupted_shard_is_caught_before_serving(cluster: Sim) -> None:
    want = controller_hashes(cluster)
    corrupt_keeping_mtime(cluster, "a2-02")
    bad = cluster.exec("a2-02", f"sha256sum {WEIGHTS}/{SHARD}").split()[0]
    assert bad != want[SHARD]
    rc, out = apply(cluster)  # fast path: size and mtime unchanged, the file is not read
    assert rc == 0 and changed(out)["a2-02"] == 0
    inventory = f"inventories/{cluster.name}/hosts.yml"
    no_repair = ansible_playbook(
        cluster.root,
        inventory,
        "weights.yml",
        "-e",
        '{"model_weights_verify_full": true, "model_weights_repair": false}',
    )
    assert no_repair.returncode != 0
    assert f"a2-02: {SHARD} under {WEIGHTS}" in no_repair.stdout, no_repair.stdout[-3000:]
    rc, out = apply(cluster, "--verify-weights")
    assert rc == 0, out["failures"]
    assert changed(out)["a2-02"] > 0
    assert server_hashes(cluster, "a2-02") == want
    aside = cluster.exec("a2-02", f"ls {WEIGHTS} | grep '^{SHARD}.mismatch-'").split()
    assert len(aside) == 1  # moved aside, not deleted
    assert cluster.exec("a2-02", f"sha256sum {WEIGHTS}/{aside[0]}").split()[0] == bad
    assert fact(cluster, "a2-02")["source"] in ("a2-01", "a2-03")


def test_a_cut_copy_resumes(cluster: Sim) -> None:
    size = (source_dir(cluster) / SHARD).stat().st_size
    cluster.exec("a2-03", f"rm {WEIGHTS}/{SHARD}")
    rc, out = apply(cluster, "--check")  # check mode: names the server that needs a copy, copies nothing
    assert rc == 0 and changed(out)["a2-03"] > 0 and changed(out)["a2-02"] == 0, out
    assert "No such file" in cluster.exec("a2-03", f"stat {WEIGHTS}/{SHARD} 2>&1")
    argv = [
        str(BIN / "ansible-playbook"),
        "-i",
        f"inventories/{cluster.name}/hosts.yml",
        str(REPO / "playbooks" / "weights.yml"),
        "-e",
        "model_weights_bwlimit_kib=1024",  # 1 MiB/s: the 16 MiB shard takes ~16 s
    ]
    env = {**ANSIBLE_ENV, **site_config(cluster.root, f"inventories/{cluster.name}/hosts.yml")}
    proc = subprocess.Popen(
        argv, cwd=cluster.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + 120
        got = 0
        while time.monotonic() < deadline and got < 3 * 1024 * 1024:
            out = cluster.exec("a2-03", f"stat -c %s {WEIGHTS}/{SHARD} 2>/dev/null || echo 0")
            got = int(out.strip() or 0)
            time.sleep(0.5)
        assert got >= 3 * 1024 * 1024, "the copy never started"
        # cut it: TERM the receiving rsync processes of a2-03 (a receiver only in this round)
        cluster.exec(
            "a2-03",
            'for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = rsync ] && kill ${p#/proc/}; done',
        )
        log, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0, log[-3000:]
    partial = int(cluster.exec("a2-03", f"stat -c %s {WEIGHTS}/{SHARD}").strip())
    assert 0 < partial < size
    rc, out = apply(cluster)
    assert rc == 0, out["failures"]
    assert server_hashes(cluster, "a2-03") == controller_hashes(cluster)
    seed = fact(cluster, "a2-03")["source"]
    assert seed in ("a2-01", "a2-02")
    lines = [
        line.split()
        for line in cluster.exec(seed, f"cat {LOG}").splitlines()
        if f"send {address(cluster, 'a2-03')} {SHARD} " in line
    ]
    length, sent = int(lines[-1][-2]), int(lines[-1][-1])
    assert length == size and sent < size - partial // 2, (sent, size, partial)  # only the rest was sent
