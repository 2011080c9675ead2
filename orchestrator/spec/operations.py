"""Rollout policy, gateway (orchestrator/spec/gateway.py), monitoring and drift schedule."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from orchestrator.spec.common import SecretRef, SpecModel
from orchestrator.spec.software import PackageSource

MAX_REPLICAS = 1_000_000


class Gates(SpecModel):
    startup_timeout_s: int | None = Field(
        None,
        ge=30,
        le=86400,
        description="Max wait for /health after start; default derived from weight size.",
    )
    health_interval_s: int = Field(
        2,
        ge=1,
        le=3600,
        description=(
            "Seconds between two /health polls while a replica starts and while a heal waits for a running "
            "head (at most this long between /health 200 and the next gate)."
        ),
    )
    weights_read_mb_s: int = Field(
        1000,
        ge=10,
        le=100000,
        description="Assumed weight read throughput per server, for the derived startup timeout.",
    )
    smoke_prompts: int = Field(
        3, ge=0, le=1000, description="Completions that must succeed before a replica is routable."
    )
    accuracy_tolerance: float = Field(
        0.005,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="Max relative deviation of reference logprobs vs the previous release.",
    )
    max_error_rate: float = Field(
        0.0,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description=(
            "Share of the smoke completions that may fail (an HTTP error, an empty answer, over "
            "latency_budget_s) before the completion gate fails; 0: any failure fails it. An answer that "
            "differs from the previous release's always fails it."
        ),
    )
    latency_budget_s: float = Field(
        30.0,
        gt=0,
        le=3600,
        allow_inf_nan=False,
        description="Max seconds a smoke completion may take (first request after start included).",
    )
    drain_timeout_s: int = Field(
        60,
        ge=0,
        le=86400,
        description="Max wait for a replica's running requests to finish after it left the gateway.",
    )
    soak_s: int = Field(
        5,
        ge=0,
        le=3600,
        description="Seconds after the other gates before /health is checked again (catches early crashes).",
    )
    progress_interval_s: int = Field(
        30,
        ge=0,
        le=3600,
        description=(
            "Seconds between two progress lines while a replica starts: its phase from the container log "
            "(loading weights n/N shards, compiling, capturing graphs, API server up), so a long start shows "
            "it is alive. 0: no progress lines."
        ),
    )
    soak_batches: Literal["first", "all"] = Field(
        "first",
        description=(
            "Batches of a rolling update whose replicas soak: 'first' (the canary batch, or the first batch "
            "without one: a release that crashes soon after start is caught there) or 'all'. New replicas "
            "and a failed replica's restored release always soak."
        ),
    )


class Warmup(SpecModel):
    """The requests a replica serves after its gates and before the gateway routes to it, so its first users
    do not pay the kernels' JIT compile time (a high TTFT on the first request of a shape while Triton /
    bisheng compile: https://github.com/vllm-project/vllm-ascend/issues/7193)."""

    enabled: bool = Field(
        True,
        description=(
            "Warm every replica (every PD rank) up after its gates, before it is routable: rounds of the "
            "warm-up set until its latency settles (at most max_rounds); a replica whose last round is "
            "over rollout.gates.latency_budget_s, or whose request fails, is rolled back like a failed gate."
        ),
    )
    system_prompts: list[Annotated[str, Field(min_length=1, max_length=100_000)]] = Field(
        default_factory=list,
        max_length=32,
        description="The site's system prompts: each is warmed up as a chat's system message.",
    )
    long_prompt_tokens: int = Field(
        1024,
        ge=16,
        le=1_000_000,
        description="Words of the long prompt (capped to fit serving.max_model_len).",
    )
    max_rounds: int = Field(5, ge=2, le=100, description="Rounds of the warm-up set at most.")
    settle_ratio: float = Field(
        1.25,
        gt=1,
        le=10,
        allow_inf_nan=False,
        description=(
            "Latency has settled when a round's total took at most this many times (or 50 ms per request "
            "more than) the round before's, and the other way round."
        ),
    )


class Rollout(SpecModel):
    canary: int = Field(
        1,
        ge=0,
        le=MAX_REPLICAS,
        description=(
            "Head servers in the first batch (0: no canary batch); each rolls the replicas it heads one "
            "after another, so the plan's first replica to roll is the canary."
        ),
    )
    batch_size: Annotated[int, Field(le=MAX_REPLICAS)] | str = Field(
        1,
        description=(
            "Head servers per later batch: a number or a percentage of the replicas such as '25%' (a "
            "batch of k head servers has at most k replicas out of service)."
        ),
        union_mode="left_to_right",
    )
    max_fail_percentage: int = Field(0, ge=0, le=100)
    min_available: int | None = Field(
        None, ge=0, le=MAX_REPLICAS, description="Replicas that must stay serving during a rollout."
    )
    auto_rollback: bool = True
    gates: Gates = Field(default_factory=Gates)
    warmup: Warmup = Field(default_factory=Warmup)


class Grafana(SpecModel):
    enabled: bool = Field(
        False,
        description="Provision the Prometheus data source and the Ascend dashboards into a Grafana on the "
        "monitoring host (Grafana itself is installed by the operator: docs/monitoring.md).",
    )


class Monitoring(SpecModel):
    enabled: bool = True
    host: str | None = Field(None, description="Server with role 'monitoring' (default: first such server).")
    prometheus_port: int = Field(9090, ge=1, le=65535)
    node_exporter_port: int = Field(9100, ge=1, le=65535)
    npu_exporter_port: int = Field(8082, ge=1, le=65535)
    scrape_interval_s: int = Field(15, ge=1, le=86400)
    retention_days: int = Field(15, ge=1, le=36500)
    npu_exporter: PackageSource | None = Field(
        None,
        description="MindCluster's npu-exporter zip (Ascend-mindxdl-npu-exporter_<ver>_linux-<arch>.zip), "
        "installed in binary mode on every NPU server; unset: no npu-exporter (its job has no target).",
    )
    grafana: Grafana = Field(default_factory=Grafana)


class DriftOutput(SpecModel):
    type: Literal["file", "webhook"] = "file"
    path: str | None = Field(
        None,
        description="For 'file': report folder on the controller (relative: from the project root); each "
        "drift run writes <path>/<site>/<run id>.json and latest.json.",
    )
    url: SecretRef | None = Field(
        None,
        description="For 'webhook': reference to the URL each drift report (JSON) is POSTed to; it may "
        "embed a token and is never printed. A relative file: path is taken from the spec's folder.",
    )


def _default_outputs() -> list[DriftOutput]:
    return [DriftOutput(type="file", path="drift-reports")]


class Drift(SpecModel):
    enabled: bool = Field(True, description="false: `orchestrator drift schedule` installs nothing.")
    schedule: str = Field(
        "0 */6 * * *",
        description="When `orchestrator drift schedule` runs the check (its --every takes the same words): "
        "five cron fields; hourly, daily, weekly or monthly (at a minute, and hour, derived from the site "
        "name); a daily time such as 02:00; or a time span of 5 minutes or more (30min, 6h, 1d). All but a "
        "span become five cron fields, printed as such with --cron and installed as the timer's "
        "OnCalendar lines (both fire at the same times); a span makes a monotonic timer.",
    )
    outputs: list[DriftOutput] = Field(default_factory=_default_outputs)
    fail_on_drift: bool = Field(
        True,
        description="Exit 3 when drift is found; false: drift alone exits 0 (the report still says drift), "
        "a failed check still exits 3.",
    )
