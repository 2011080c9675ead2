"""The fake's weight loading follows vLLM v0.23.0's safetensors loader (fake_vllm/loader.py; its decisions and
log lines are those of vllm/model_executor/model_loader/weight_utils.py @v0.23.0): the filesystem line, the
auto-prefetch of a checkpoint on a network filesystem that fits in 90% of the available RAM, prefetch and
eager when asked for, and a network filesystem read through mmap (lazy) being the slow way."""

from __future__ import annotations

import re
import time
from pathlib import Path

from .conftest import Sandbox

STARTED = (
    "Prefetching checkpoint files into page cache started (in background, num_threads=8, "
    "block_size=16777216 bytes)"
)


def started(sandbox: Sandbox, ckpt: Path, *args: str, **env: str) -> tuple[str, float]:
    """The server's log once it is healthy, and the seconds its weights took."""
    proc = sandbox.start(["serve", str(ckpt), *args], FAKE_VLLM_INIT_S="0", **env)
    proc.wait_healthy()
    out = proc.stdout()
    took = re.search(r"Loading weights took ([\d.]+) seconds", out)
    assert took is not None, out[-2000:]
    assert proc.terminate() == 0
    return out, float(took[1])


def test_local_disk_says_why_auto_prefetch_is_off(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    out, _ = started(sandbox, checkpoints["a"])
    assert "[weight_utils.py:922] Filesystem type for checkpoints: EXT4. Checkpoint size: " in out
    assert "Auto-prefetch is disabled because the filesystem (EXT4) is not a recognized network FS" in out
    assert "Prefetching checkpoint files" not in out and "Loading safetensors checkpoint shards:" in out


def test_nfs_prefetches_by_itself_when_the_checkpoint_fits(
    sandbox: Sandbox, checkpoints: dict[str, Path]
) -> None:
    out, _ = started(sandbox, checkpoints["a"], FAKE_VLLM_FS_TYPE="nfs")
    assert "Filesystem type for checkpoints: NFS." in out and STARTED in out
    assert re.search(r"Prefetching checkpoint files into page cache finished in [\d.]+s", out)
    small, _ = started(sandbox, checkpoints["a"], FAKE_VLLM_FS_TYPE="nfs", FAKE_VLLM_AVAILABLE_RAM_GIB="0")
    assert "Network filesystem (NFS) detected but checkpoint total size" in small
    assert "Skipping auto-prefetch." in small and STARTED not in small


def test_the_strategies_a_spec_renders(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    eager, _ = started(
        sandbox, checkpoints["a"], "--safetensors-load-strategy", "eager", FAKE_VLLM_FS_TYPE="nfs"
    )
    assert "Loading safetensors checkpoint shards (eager):" in eager and STARTED not in eager
    forced, _ = started(sandbox, checkpoints["a"], "--safetensors-load-strategy", "prefetch")
    assert STARTED in forced and "Auto-prefetch is disabled" not in forced


def test_mmap_from_a_network_filesystem_is_the_slow_way(
    sandbox: Sandbox, checkpoints: dict[str, Path]
) -> None:
    rate = {"FAKE_VLLM_FS_TYPE": "nfs", "FAKE_VLLM_LOAD_MB_S": "4", "FAKE_VLLM_NETFS_MMAP_SLOWDOWN": "4"}
    size_mb = sum(p.stat().st_size for p in checkpoints["a"].glob("*.safetensors")) / (1 << 20)
    _, fast = started(sandbox, checkpoints["a"], "--safetensors-load-strategy", "prefetch", **rate)
    start = time.monotonic()
    _, slow = started(sandbox, checkpoints["a"], "--safetensors-load-strategy", "lazy", **rate)
    assert slow >= 4 * size_mb / 4 * 0.95 and slow > fast, (slow, fast, size_mb, time.monotonic() - start)
