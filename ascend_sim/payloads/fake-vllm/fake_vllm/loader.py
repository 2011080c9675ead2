"""How the fake reads a checkpoint: vLLM v0.23.0's safetensors loader decisions and log lines
(vllm/model_executor/model_loader/weight_utils.py @v0.23.0, ``safetensors_weights_iterator`` and
``_prefetch_all_checkpoints``), with the filesystem as the simulated hardware's.

vLLM reads the checkpoint's filesystem type from /proc/mounts; a simulated server's weights are always on its
local disk, so ``FAKE_VLLM_FS_TYPE`` (e.g. ``nfs``) says what the weights directory would be mounted as. On a
network filesystem (nfs, nfs4, lustre) mmap's small random reads are slow: the default (lazy) loads at
``FAKE_VLLM_NETFS_MMAP_SLOWDOWN`` (default 4) times less than the load rate, while eager (whole files) and
prefetch (files read into the page cache first, sequentially) read at the full rate. The slowdown is a
model, not a measurement: vLLM's prefetch pull request measured 3.4x to 17x on DeepSeek-V3 from network
storage (https://github.com/vllm-project/vllm/pull/36012).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from . import vlog

NETWORK_FS = ("nfs", "nfs4", "lustre")  # weight_utils.py @v0.23.0: is_net_fs
RAM_THRESHOLD_PCT = 90
SOURCE = "weight_utils.py"


@dataclass(frozen=True)
class Reading:
    """What the loader does: the progress bar's description, whether it prefetches, the pace factor."""

    desc: str
    prefetch: bool
    slowdown: float


def _available_ram_bytes(env: dict[str, str]) -> int:
    given = env.get("FAKE_VLLM_AVAILABLE_RAM_GIB")
    if given:
        return int(float(given) * (1 << 30))
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


def decide(strategy: str | None, total_bytes: int, env: dict[str, str]) -> Reading:
    """vLLM's decision for ``--safetensors-load-strategy`` ``strategy`` (None: not given), with its log."""
    fs_type = (env.get("FAKE_VLLM_FS_TYPE") or "ext4").lower()
    is_net_fs = fs_type in NETWORK_FS
    avail = _available_ram_bytes(env)
    fits = total_bytes <= RAM_THRESHOLD_PCT / 100.0 * avail
    name = fs_type.upper()
    gib, avail_gib = total_bytes / 1024**3, avail / 1024**3
    vlog.info(
        f"{SOURCE}:922",
        f"Filesystem type for checkpoints: {name}. Checkpoint size: {gib:.2f} GiB. "
        f"Available RAM: {avail_gib:.2f} GiB.",
    )
    prefetch = strategy == "prefetch"
    if strategy is None:
        if is_net_fs and fits:
            prefetch = True
        elif is_net_fs:
            vlog.warning(
                f"{SOURCE}:935",
                f"Network filesystem ({name}) detected but checkpoint total size ({gib:.2f} GiB) exceeds "
                f"{RAM_THRESHOLD_PCT}% of available RAM ({avail_gib:.2f} GiB). Skipping auto-prefetch.",
            )
        elif fits:
            vlog.info(
                f"{SOURCE}:945",
                f"Auto-prefetch is disabled because the filesystem ({name}) is not a recognized network FS "
                "(NFS/Lustre). If you want to force prefetching, start vLLM with "
                "--safetensors-load-strategy=prefetch.",
            )
        else:
            vlog.info(
                f"{SOURCE}:952",
                f"Auto-prefetch is disabled because the filesystem ({name}) is not a recognized network FS "
                f"(NFS/Lustre) and the checkpoint size ({gib:.2f} GiB) exceeds {RAM_THRESHOLD_PCT}% of "
                f"available RAM ({avail_gib:.2f} GiB).",
            )
    elif prefetch and not fits:
        vlog.warning(
            f"{SOURCE}:962",
            f"safetensors_load_strategy='prefetch' was explicitly specified, but checkpoint total size "
            f"({gib:.2f} GiB) exceeds {RAM_THRESHOLD_PCT}% of available RAM ({avail_gib:.2f} GiB). This may "
            "cause out-of-memory errors.",
        )
    desc = "Loading safetensors checkpoint shards" + (" (eager)" if strategy == "eager" else "")
    sequential = prefetch or strategy == "eager"
    slowdown = 1.0 if sequential or not is_net_fs else _slowdown(env)
    return Reading(desc=desc, prefetch=prefetch, slowdown=slowdown)


def _slowdown(env: dict[str, str]) -> float:
    try:
        return max(float(env.get("FAKE_VLLM_NETFS_MMAP_SLOWDOWN") or 4.0), 1.0)
    except ValueError:
        return 4.0


def prefetch_started(threads: int, block_size: int) -> None:
    vlog.info(
        f"{SOURCE}:884",
        "Prefetching checkpoint files into page cache started "
        f"(in background, num_threads={threads}, block_size={block_size} bytes)",
    )


def prefetch_finished(seconds: float) -> None:
    vlog.info(f"{SOURCE}:879", f"Prefetching checkpoint files into page cache finished in {seconds:.2f}s")
