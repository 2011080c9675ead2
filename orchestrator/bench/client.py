"""The load client: N asyncio workers per level, each sending streamed completions back to back through the
official `openai` client (AsyncOpenAI).

Measured from the stream, as vLLM's own `vllm bench serve` and guidellm do: TTFT is the time from sending the
request to the first chunk with text; the inter-token latencies are the gaps between later text chunks;
latency is the time to the end of the stream. Output tokens come from the final usage chunk
(`stream_options: {"include_usage": true}`, which vLLM's OpenAI server supports) and, when the server sends
none, from the number of text chunks. `ignore_eos` (a vLLM extra sampling parameter) keeps every answer
max_tokens long, so the levels compare the same work.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass, field

import httpx
import openai
from openai import AsyncOpenAI


@dataclass(frozen=True)
class Load:
    model: str
    prompt: str
    max_tokens: int
    duration_s: float | None  # seconds of load per level, or
    requests: int | None  # this many requests per level
    timeout_s: float = 600.0
    warmup: int = 1  # requests sent (and not counted) before the first level: connection set-up, lazy loads


@dataclass
class Sample:
    ok: bool
    reason: str = ""  # why it failed ("HTTP 503", "connection refused", "timeout", "empty answer")
    ttft_s: float | None = None
    itl_s: list[float] = field(default_factory=list)
    latency_s: float = 0.0
    output_tokens: int = 0


@dataclass
class LevelRun:
    concurrency: int
    elapsed_s: float
    samples: list[Sample]


class Unreachable(Exception):
    """The endpoint did not accept a connection (nothing listens, DNS, route)."""


def _reason(exc: Exception) -> str:
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}"
    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "connection error"
    return type(exc).__name__


async def one_request(client: AsyncOpenAI, load: Load, number: int = 0) -> Sample:
    start = time.perf_counter()
    stamps: list[float] = []
    usage_tokens: int | None = None
    try:
        stream = await client.completions.create(
            model=load.model,
            prompt=f"{number} {load.prompt}",  # a distinct first word: no prefix-cache hit across requests
            max_tokens=load.max_tokens,
            stream=True,
            stream_options={"include_usage": True},
            extra_body={"ignore_eos": True},
        )
        async for chunk in stream:
            if chunk.usage is not None:
                usage_tokens = chunk.usage.completion_tokens
            if any(c.text for c in chunk.choices):
                stamps.append(time.perf_counter())
    except (openai.OpenAIError, httpx.HTTPError) as exc:
        return Sample(False, _reason(exc), latency_s=time.perf_counter() - start)
    end = time.perf_counter()
    if not stamps:
        return Sample(False, "empty answer", latency_s=end - start)
    return Sample(
        True,
        ttft_s=stamps[0] - start,
        itl_s=[b - a for a, b in itertools.pairwise(stamps)],
        latency_s=end - start,
        output_tokens=usage_tokens if usage_tokens is not None else len(stamps),
    )


async def _worker(
    client: AsyncOpenAI, load: Load, deadline: float, budget: list[int], out: list[Sample]
) -> None:
    while time.perf_counter() < deadline:
        budget[1] += 1
        if load.requests is not None:
            if budget[0] <= 0:
                return
            budget[0] -= 1
        out.append(await one_request(client, load, budget[1]))


async def run_level(client: AsyncOpenAI, load: Load, concurrency: int) -> LevelRun:
    start = time.perf_counter()
    deadline = start + (load.duration_s if load.duration_s is not None else load.timeout_s)
    budget = [load.requests or 0, 0]  # requests left, requests started
    samples: list[Sample] = []
    await asyncio.gather(*(_worker(client, load, deadline, budget, samples) for _ in range(concurrency)))
    return LevelRun(concurrency, time.perf_counter() - start, samples)


async def probe(base_url: str, timeout_s: float = 5.0) -> None:
    """Raise Unreachable when nothing accepts a connection at base_url (any HTTP answer is reachable)."""
    try:
        async with httpx.AsyncClient(timeout=timeout_s) as http:
            await http.get(base_url.rstrip("/") + "/models")
    except httpx.TransportError as exc:
        raise Unreachable(f"{base_url}: {type(exc).__name__}: {exc}") from None


def make_client(base_url: str, api_key: str | None, load: Load, concurrency: int) -> AsyncOpenAI:
    limits = httpx.Limits(max_connections=concurrency + 4, max_keepalive_connections=concurrency + 4)
    return AsyncOpenAI(
        base_url=base_url,
        api_key=api_key or "EMPTY",  # vLLM without --api-key accepts any key
        timeout=load.timeout_s,
        max_retries=0,  # a failed request is a measurement, not something to hide
        http_client=httpx.AsyncClient(limits=limits, timeout=load.timeout_s),
    )


async def run_levels(base_url: str, api_key: str | None, load: Load, levels: list[int]) -> list[LevelRun]:
    await probe(base_url)
    async with make_client(base_url, api_key, load, 1) as client:
        for n in range(load.warmup):
            await one_request(client, load, -1 - n)  # its result is not a measurement
    runs = []
    for level in levels:
        async with make_client(base_url, api_key, load, level) as client:
            runs.append(await run_level(client, load, level))
    return runs
