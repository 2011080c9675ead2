"""Load through the gateway for the simulated-cluster tests: an async client (the official `openai` package)
keeps `concurrency` requests in flight through the router for the whole run - completions and chat
completions, streamed and not, in turn - and counts each success and each failure with its reason; a sampler
polls the router's GET /list_workers every `sample_s` seconds and records how many workers it routes to (the
minimum over the run is what a rolling update must keep >= min_available).

    report = run_load(gateway_url, api_key, model, concurrency=8, seconds=10)
    with BackgroundLoad(gateway_url, api_key, model, concurrency=8) as load:
        ...  # e.g. a rolling update
    report = load.report

`python -m tests.integration.sim.load URL MODEL --key-file F [--concurrency N] [--seconds S]` prints the
report as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import openai

KINDS = ("completion", "chat", "completion-stream", "chat-stream")


@dataclass
class LoadReport:
    seconds: float = 0.0
    ok: int = 0
    failed: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    by_kind: Counter[str] = field(default_factory=Counter)
    latencies_s: list[float] = field(default_factory=list)
    worker_samples: list[tuple[float, int]] = field(default_factory=list)  # (seconds since start, workers)
    sampler_errors: Counter[str] = field(default_factory=Counter)

    @property
    def min_workers(self) -> int | None:
        return min((n for _, n in self.worker_samples), default=None)

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latencies_s)
        return {
            "seconds": round(self.seconds, 2),
            "ok": self.ok,
            "failed": self.failed,
            "reasons": dict(self.reasons),
            "by_kind": dict(self.by_kind),
            "sampler_errors": dict(self.sampler_errors),
            "min_workers": self.min_workers,
            "samples": len(self.worker_samples),
            "p50_s": round(lat[len(lat) // 2], 4) if lat else None,
            "p99_s": round(lat[min(len(lat) - 1, int(len(lat) * 0.99))], 4) if lat else None,
            "requests_per_s": round(self.ok / self.seconds, 1) if self.seconds else None,
        }


def _reason(exc: BaseException) -> str:
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {str(exc.message)[:120]}"
    return f"{type(exc).__name__}: {str(exc)[:120]}"


async def _one(client: openai.AsyncOpenAI, model: str, kind: str, n: int) -> str:
    """One request; returns the generated text (a failure raises)."""
    prompt = f"load request {n}: the quick brown fox"
    if kind == "completion":
        r = await client.completions.create(model=model, prompt=prompt, max_tokens=4, temperature=0)
        return r.choices[0].text
    if kind == "chat":
        c = await client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": prompt}], max_tokens=4, temperature=0
        )
        return c.choices[0].message.content or ""
    if kind == "completion-stream":
        text = ""
        async for chunk in await client.completions.create(
            model=model, prompt=prompt, max_tokens=4, temperature=0, stream=True
        ):
            text += chunk.choices[0].text if chunk.choices else ""
        return text
    text = ""
    async for part in await client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": prompt}], max_tokens=4, temperature=0, stream=True
    ):
        text += (part.choices[0].delta.content or "") if part.choices else ""
    return text


async def _worker(
    client: openai.AsyncOpenAI, model: str, idx: int, stop: asyncio.Event, report: LoadReport
) -> None:
    n = idx
    while not stop.is_set():
        kind = KINDS[n % len(KINDS)]
        t0 = time.monotonic()
        try:
            text = await _one(client, model, kind, n)
            if not text.strip():
                raise ValueError("empty answer")
        except Exception as exc:  # every failure is counted with its reason, none ends the run
            report.failed += 1
            report.reasons[f"{kind}: {_reason(exc)}"] += 1
        else:
            report.ok += 1
            report.by_kind[kind] += 1
            report.latencies_s.append(time.monotonic() - t0)
        n += 1


async def _sampler(
    gateway_url: str, sample_s: float, start: float, stop: asyncio.Event, report: LoadReport
) -> None:
    async with httpx.AsyncClient(timeout=5) as http:
        while not stop.is_set():
            try:
                r = await http.get(f"{gateway_url}/list_workers")
                r.raise_for_status()
                report.worker_samples.append((time.monotonic() - start, len(r.json()["urls"])))
            except Exception as exc:  # a router that does not answer counts as 0 workers
                report.sampler_errors[f"{type(exc).__name__}: {str(exc)[:80]}"] += 1
                report.worker_samples.append((time.monotonic() - start, 0))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), sample_s)


async def run_load_async(
    gateway_url: str,
    api_key: str | None,
    model: str,
    *,
    concurrency: int = 8,
    seconds: float | None = 10.0,
    sample_s: float = 0.2,
    stop: asyncio.Event | None = None,
    request_timeout_s: float = 60.0,
) -> LoadReport:
    """Until `seconds` pass (or `stop` is set): `concurrency` clients in a loop, the sampler beside them."""
    stop = stop or asyncio.Event()
    report = LoadReport()
    client = openai.AsyncOpenAI(
        base_url=f"{gateway_url}/v1", api_key=api_key or "none", max_retries=0, timeout=request_timeout_s
    )
    start = time.monotonic()
    tasks = [asyncio.create_task(_worker(client, model, i, stop, report)) for i in range(concurrency)]
    tasks.append(asyncio.create_task(_sampler(gateway_url, sample_s, start, stop, report)))
    try:
        if seconds is not None:
            try:
                await asyncio.wait_for(stop.wait(), seconds)
            except TimeoutError:
                stop.set()
        await asyncio.gather(*tasks)
    finally:
        stop.set()
        await client.close()
    report.seconds = time.monotonic() - start
    return report


def run_load(gateway_url: str, api_key: str | None, model: str, **kw: Any) -> LoadReport:
    return asyncio.run(run_load_async(gateway_url, api_key, model, **kw))


class BackgroundLoad:
    """The load in a thread of its own (its own event loop) while the test does something else."""

    def __init__(self, gateway_url: str, api_key: str | None, model: str, **kw: Any) -> None:
        self._args = (gateway_url, api_key, model)
        self._kw = {**kw, "seconds": None}
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gateway-load", daemon=True)
        self.report: LoadReport | None = None
        self.error: BaseException | None = None

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def main() -> LoadReport:
            self._stop = asyncio.Event()
            self._ready.set()
            return await run_load_async(*self._args, stop=self._stop, **self._kw)

        try:
            self.report = self._loop.run_until_complete(main())
        except BaseException as exc:  # handed to the test by stop()
            self.error = exc
            self._ready.set()

    def __enter__(self) -> BackgroundLoad:
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> LoadReport:
        if self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(120)
        if self.error is not None:
            raise self.error
        assert self.report is not None, "the load thread did not finish within 120 s"
        return self.report

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m tests.integration.sim.load", description=__doc__.split("\n")[0]
    )
    ap.add_argument("gateway_url")
    ap.add_argument("model")
    ap.add_argument("--key-file", type=Path)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=10.0)
    a = ap.parse_args(argv)
    key = a.key_file.read_text(encoding="utf-8").strip() if a.key_file else None
    report = run_load(a.gateway_url, key, a.model, concurrency=a.concurrency, seconds=a.seconds)
    json.dump(report.summary(), sys.stdout, indent=1)
    print()
    return 0 if report.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
