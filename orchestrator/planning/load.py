"""How the replicas read the weights: `vllm serve --safetensors-load-strategy`, from where the weights live.

vLLM's default reads the safetensors files through mmap, which suits a server's own disk; on a network
filesystem its small random reads are slow, and vLLM recommends eager (whole files into RAM) or prefetch (the
files into the page cache first) there (LoadConfig's docstring, catalog/load_strategies.py; vllm-ascend's
DeepSeek-V3.1 and DeepSeek-V4-Pro recipes pass prefetch, and a user with slow loads on an A3 was asked for
the storage type and told eager: https://github.com/vllm-project/vllm-ascend/issues/6175). Prefetching a
checkpoint larger than the server's memory only evicts itself, so that case loads lazily (vLLM's own
auto-prefetch skips checkpoints over 90% of the available RAM:
https://github.com/vllm-project/vllm/pull/37673)."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.catalog import ModelArch, get_release
from orchestrator.catalog.load_strategies import LoadStrategies, load_strategies
from orchestrator.planning import capacity as cap
from orchestrator.planning.resolve import effective_quantization
from orchestrator.spec.site import SiteSpec

RAM_SHARE = 0.9
GB = 1e9
GIB = float(1 << 30)


@dataclass(frozen=True)
class LoadPlan:
    strategy: str | None  # the flag's value; None renders no flag
    why: str

    def args(self) -> list[str]:
        return [] if self.strategy is None else ["--safetensors-load-strategy", self.strategy]


def serving_memory_gb(spec: SiteSpec) -> int | None:
    """The smallest memory_gb of the profiles of servers that run a replica (each reads the whole
    checkpoint through its page cache)."""
    names = {s for r in spec.serving.replicas for s in r.servers}
    pd = spec.serving.disaggregation
    if pd is not None:
        names |= {s for pool in (pd.prefill, pd.decode) for i in pool.instances for s in i.servers}
    sizes = [spec.profiles[s.profile].memory_gb for s in spec.servers if s.name in names and s.profile]
    return min(sizes, default=None)


def site_load(spec: SiteSpec, arch: ModelArch) -> LoadPlan:
    """The plan of the site's pinned vLLM (software.vllm_ascend.vllm, else its release's) and checkpoint."""
    stack = spec.software.vllm_ascend
    try:
        vllm = stack.vllm or get_release(stack.version).vllm
    except KeyError:  # an unknown release (allow_unsupported) without software.vllm_ascend.vllm: the newest
        vllm = "999.0.0"
    gib = cap.weight_bytes_total(arch, effective_quantization(spec.model, arch)) / cap.GIB
    return load_plan(spec, gib, vllm)


def load_plan(spec: SiteSpec, checkpoint_gib: float, vllm_version: str) -> LoadPlan:
    release = load_strategies(vllm_version)
    wanted = spec.model.load_strategy
    if wanted != "auto":
        return LoadPlan(wanted, "model.load_strategy")
    if release is None:
        version = vllm_version.removeprefix("v")
        return LoadPlan(None, f"vLLM v{version} has no --safetensors-load-strategy: its default loading")
    return _auto(spec, checkpoint_gib, release)


def _auto(spec: SiteSpec, checkpoint_gib: float, release: LoadStrategies) -> LoadPlan:
    storage = spec.model.storage
    if storage == "local":
        return LoadPlan(None, "weights on local disk: mmap")
    memory = serving_memory_gb(spec)
    budget_gib = (memory or 0) * GB / GIB * RAM_SHARE
    size = f"the {checkpoint_gib:,.0f} GiB checkpoint"
    if memory is None or checkpoint_gib > budget_gib:
        room = f"{memory:,} GB" if memory is not None else "unknown"
        return LoadPlan(
            "lazy", f"weights on {storage}, but {size} is over 90% of the servers' memory ({room}): mmap"
        )
    fits = f"weights on {storage}; {size} fits in 90% of the servers' memory ({memory:,} GB)"
    if "prefetch" in release.values:
        return LoadPlan("prefetch", f"{fits}: read into the page cache first")
    return LoadPlan("eager", f"{fits}: whole files read at once ({release.label} has no prefetch)")
