"""The fake vLLM's compile caches (compile_cache.py, jit.py): a cold start compiles its graphs and writes them
where vLLM does (~/.cache/vllm/torch_compile_cache/<hash>/rank_0_0/vllm_compile_cache.py); a second start
with the same configuration loads them and is faster; another configuration has another hash; Triton's JIT
kernels of the first process are not compiled again by the second; an unwritable cache compiles every time."""

from __future__ import annotations

import re
import time
from pathlib import Path

from .conftest import Sandbox, http

COMPILE_S = "0.8"


def start(sandbox: Sandbox, ckpt: Path, *args: str, **env: str) -> tuple[float, str]:
    """Seconds to /health 200 and the server's log, after a clean stop."""
    began = time.monotonic()
    proc = sandbox.start(["serve", str(ckpt), *args], FAKE_VLLM_COMPILE_S=COMPILE_S, **env)
    proc.wait_healthy()
    took = time.monotonic() - began
    assert proc.terminate() == 0
    return took, proc.stdout() + proc.stderr()


def test_the_second_start_loads_the_compiled_graphs_and_is_faster(
    sandbox: Sandbox, checkpoints: dict[str, Path]
) -> None:
    cold, log = start(sandbox, checkpoints["a"])
    assert "Compiling a graph for dynamic shape takes" in log, log
    (cache,) = (sandbox.root / "home" / ".cache" / "vllm" / "torch_compile_cache").iterdir()
    assert (
        re.fullmatch(r"[0-9a-f]{10}", cache.name) and (cache / "rank_0_0" / "vllm_compile_cache.py").is_file()
    )
    warm, log = start(sandbox, checkpoints["a"])
    assert "Directly load the compiled graph(s) for dynamic shape from the cache" in log, log
    assert "Compiling a graph" not in log
    assert warm < cold - 0.5, (warm, cold)
    # another configuration: another hash, compiled again; the port is not part of the configuration
    _, log = start(sandbox, checkpoints["a"], "--max-model-len", "1024")
    assert "Compiling a graph for dynamic shape takes" in log
    assert len(list(cache.parent.iterdir())) == 2


def test_an_unwritable_cache_compiles_every_time(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    blocked = sandbox.root / "not-a-dir"
    blocked.write_text("")
    for _ in range(2):
        _, log = start(sandbox, checkpoints["a"], VLLM_CACHE_ROOT=str(blocked / "vllm"))
        assert "Compiling a graph for dynamic shape takes" in log
        assert "Cannot write the compile cache" in log


def test_jit_kernels_persist_in_the_triton_cache(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    triton = sandbox.root / "triton"

    def first_completion() -> tuple[float, str]:
        proc = sandbox.start(
            ["serve", str(checkpoints["a"])], FAKE_VLLM_JIT_MS="800", TRITON_CACHE_DIR=str(triton)
        )
        proc.wait_healthy()
        began = time.monotonic()
        assert proc.port is not None
        body = {"model": str(checkpoints["a"]), "prompt": "hi", "max_tokens": 2}
        reply = http(proc.port, "/v1/completions", body)
        took = time.monotonic() - began
        assert reply.status == 200, reply.body
        assert proc.terminate() == 0
        return took, proc.stdout() + proc.stderr()

    slow, log = first_completion()
    assert slow >= 0.8 and "Compiling kernels for shape completion" in log
    assert [p.name for p in triton.iterdir()] == ["fake-completion-16-whole"]
    fast, log = first_completion()
    assert fast < 0.4 and "Compiling kernels" not in log, (fast, log)
