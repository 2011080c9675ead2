"""Prefill/decode disaggregated serving on a copy of the mx golden (goldens.py), its spec turned into `sim up
--layout pd`'s (ascend_sim/spec_pd.py: prefill p1 and p2 on a2-01, decode d1 and d2 each a DP group over
a2-02 and a2-03), the mixed layout's replicas removed. One `orchestrator apply --phases serve,gateway`:

- starts the six PD ranks as their own containers, gates every rank and runs a PD round trip per rank
  (ascend.npu.vllm_pd_roundtrip: prefill, KV pulled by the decode, KV freed on the prefill), puts the PD
  router slot with every rank behind the front router and takes the mixed layout's replica heads out of the
  front; requests through the gateway answer with the openai client, and the decode ranks' logs show the KV
  came from a prefill rank (the Mooncake connector's transfer line, vLLM's external_kv_transfer counter);
- a second apply changes nothing, and drift right after it finds nothing; `orchestrator status` shows every
  instance healthy and routed, and a decode rank that is not its instance's first stops answering /health:
  status and drift both name that rank;
- a new release of both pools rolls one instance at a time (p1, p2 on a2-01, then d1, d2 on a2-02) under
  load through the gateway: 0 failed requests, every instance gated with its round trips;
- a release with a PD fault (the prefill reports a wrong engine id, holds KV forever, or the decode's pulls
  fail) fails the canary instance's round trip gate, which rolls back to the release before; exit 3."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest
import yaml

from ascend_sim.spec_pd import disaggregation
from ascend_sim.state import ClusterState, SimServer
from tests.integration.sim import goldens
from tests.integration.sim.load import BackgroundLoad
from tests.integration.sim.serving_helpers import http, sh
from tests.integration.sim.sim_helpers import BIN, Sim, run

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group(goldens.group("mx"))]

MODEL = "sim-deepseek"
RANKS = {
    "a2-01": ["vllm-p1-dp0", "vllm-p2-dp0"],
    "a2-02": ["vllm-d1-dp0", "vllm-d2-dp0"],
    "a2-03": ["vllm-d1-dp1", "vllm-d2-dp1"],
}
ROUND_TRIP = ["pd_prefill", "pd_decode"]
GATES = "  gates: {startup_timeout_s: 30, soak_s: 1, latency_budget_s: 10}\n"
TRANSFER = re.compile(r"KV cache transfer for request \S+ took [0-9.]+ ms\. .*remote_session_id ([0-9.]+):")


def pd_spec(sim: Sim) -> None:
    """The copy's spec with the pd layout's serving section (same servers, model, image and key)."""
    site = sim.root / "inventories" / sim.name / "site.yaml"
    text = site.read_text(encoding="utf-8")
    head, rest = text.split("  replicas:\n", 1)
    tail = rest[rest.index("image:") :]
    state = ClusterState(sim.name, "atlas-800t-a2", 3, True, True, 1, "pd")
    state.servers = [SimServer(f"a2-0{i}", f"127.0.0.{i + 1}", ["npu"], True) for i in (1, 2, 3)]
    body = head + "\n".join(disaggregation(state, 8)) + "\n" + tail
    body = body.replace(
        "rollout:\n  canary: 1\n  batch_size: 1\n", "rollout:\n  canary: 1\n  batch_size: 1\n" + GATES
    )
    site.write_text(body, encoding="utf-8")


def set_pool_env(sim: Sim, pool: str, env: dict[str, str]) -> None:
    """serving.disaggregation.<pool>.env (a new release of every rank of the pool)."""
    site = sim.root / "inventories" / sim.name / "site.yaml"
    lines = site.read_text(encoding="utf-8").splitlines(keepends=True)
    out, inside = [], None
    for ln in lines:
        if ln.startswith("    ") and not ln.startswith("     ") and ln.strip().endswith(":"):
            inside = ln.strip()[:-1]
        if inside == pool and ln.startswith("      env: "):
            continue
        out.append(ln)
        if ln == f"    {pool}:\n" and env:
            inner = ", ".join(f"{k}: '{v}'" for k, v in env.items())
            out.append(f"      env: {{{inner}}}\n")
    site.write_text("".join(out), encoding="utf-8")


def cli_json(sim: Sim, *args: str) -> dict[str, Any]:
    proc = run([str(BIN / "orchestrator"), *args, "--format", "json"], sim.root, check=False, timeout=1800)
    return parse(proc)


def parse(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.stdout.count("\n") == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(proc.stdout)
    out["exit"], out["stderr"] = proc.returncode, proc.stderr
    return out


def apply(sim: Sim, phases: str) -> dict[str, Any]:
    return cli_json(sim, "apply", sim.name, "--yes", "--phases", phases)


def group_vars(sim: Sim) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(
        (sim.root / "inventories" / sim.name / "group_vars" / "all.yml").read_text()
    )
    return data


def key(sim: Sim) -> str:
    return (sim.state_dir / "api-key").read_text().strip()


def ranks(sim: Sim) -> dict[str, dict[str, Any]]:
    """server/container -> running, started, release label."""
    out = {}
    for server, names in RANKS.items():
        for name in names:
            rc, text = sh(sim, server, f"docker inspect --format '{{{{json .}}}}' {name}")
            assert rc == 0, (server, name, text)
            info = json.loads(text)
            out[f"{server}/{name}"] = {
                "running": info["State"]["Running"],
                "started": info["State"]["StartedAt"],
                "release": info["Config"]["Labels"]["io.ascend-orchestrator.release"],
            }
    return out


def ask(sim: Sim) -> None:
    """A completion and a chat completion through the PD gateway, with the official client."""
    client = openai.OpenAI(
        base_url=f"{group_vars(sim)['gateway_url']}/v1", api_key=key(sim), max_retries=0, timeout=30
    )
    done = client.completions.create(model=MODEL, prompt="The capital of France is", max_tokens=8)
    assert done.choices[0].text, done
    chat = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Name a prime number."}], max_tokens=8
    )
    assert chat.choices[0].message.content, chat


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    for sim in goldens.module_golden(tmp_path_factory, "mx", after_restore=False):
        goldens.quiet_monitoring(sim)
        for server in RANKS:  # the mixed layout's replicas hold the NPUs the PD ranks are given
            rc, text = sh(sim, server, "docker ps -aq --filter name=^vllm- | xargs -r docker rm -f")
            assert rc == 0, text
        pd_spec(sim)
        yield sim


@pytest.fixture(scope="module")
def served(sim: Sim) -> dict[str, Any]:
    out = apply(sim, "serve,gateway")
    assert out["exit"] == 0, json.dumps(out)[-4000:] + out["stderr"][-3000:]
    return {"out": out, "ranks": ranks(sim)}


def test_pd_ranks_start_gated_and_answer_through_the_gateway(sim: Sim, served: dict[str, Any]) -> None:
    assert all(r["running"] for r in served["ranks"].values()), served["ranks"]
    assert served["out"]["rollout"] is None  # a first deploy starts every instance at once
    gv = group_vars(sim)
    status, body = http(f"{gv['gateway_url']}/list_workers")
    slots = [s["url"] for s in gv["gateway_pd_slots"]]
    front = body["urls"]
    assert status == 200 and len(front) == 1 and front[0] in slots, body  # the mixed heads left the front
    ask(sim)
    pulled = []
    for server in ("a2-02", "a2-03"):
        for name in RANKS[server]:
            rc, logs = sh(sim, server, f"docker logs {name} 2>&1")
            assert rc == 0, logs
            pulled += TRANSFER.findall(logs)
    # each decode rank's own round trip at its gate, and the requests through the gateway; from a2-01
    prefill_host = gv["vllm_serve_pd"]["prefill_worker_urls"][0].split("//")[1].split(":")[0]
    assert len(pulled) >= 4 + 2 and set(pulled) == {prefill_host}, pulled


def test_a_second_apply_changes_nothing(sim: Sim, served: dict[str, Any]) -> None:
    out = apply(sim, "serve,gateway")
    assert out["exit"] == 0, json.dumps(out)[-3000:]
    changed = {(p["name"], h): c["changed"] for p in out["phases"] for h, c in p["hosts"].items()}
    assert changed and not any(changed.values()), changed
    assert ranks(sim) == served["ranks"]


def status(sim: Sim) -> tuple[int, dict[str, Any]]:
    proc = sim.cli("status", sim.name, "--format", "json", check=False)
    assert proc.stdout.count("\n") == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout)


def drift(sim: Sim, phases: str) -> tuple[int, dict[str, Any]]:
    proc = sim.cli("drift", sim.name, "--phases", phases, "--format", "json", check=False)
    assert proc.stdout.count("\n") == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout)


def test_status_and_drift_see_every_rank_of_both_pools(sim: Sim, served: dict[str, Any]) -> None:
    rc, report = drift(sim, "serve,gateway")
    cells = [c for c in report["cells"] if c["state"] != "in_sync"]
    assert (rc, cells) == (0, []), report
    rc, doc = status(sim)
    reps = {r["replica"]: r for r in doc["replicas"]}
    assert rc == 0 and sorted(reps) == ["d1", "d2", "p1", "p2"], doc
    assert all(r["healthy"] and r["in_gateway"] for r in reps.values()), doc
    d1 = next(r for r in group_vars(sim)["rollout_replicas"] if r["name"] == "d1")
    assert reps["d1"]["urls"] == d1["urls"] and len(d1["urls"]) == 2, reps["d1"]

    sick, server = d1["urls"][1], d1["members"][1]  # rank 1 of d1, on a2-03 (the head is a2-02)
    sim.sim("fault", "vllm", server, "--never-healthy", "--port", sick.rsplit(":", 1)[1])
    try:
        deadline = time.monotonic() + 15
        rc, doc = status(sim)
        while time.monotonic() < deadline and rc == 0:  # the fault file is re-read every second
            time.sleep(1)
            rc, doc = status(sim)
        rc_drift, report = drift(sim, "serve")
    finally:
        sim.sim("fault", "vllm", server, "--clear")
    reps = {r["replica"]: r for r in doc["replicas"]}
    assert rc == 3 and not reps["d1"]["healthy"], doc
    assert reps["d1"]["health"] == f"{sick}: HTTP 503", reps["d1"]
    assert all(reps[n]["healthy"] for n in ("p1", "p2", "d2")), doc
    cells = {(c["host"], c["phase"]): c for c in report["cells"] if c["state"] != "in_sync"}
    assert (rc_drift, list(cells)) == (3, [(d1["head"], "serve")]), report
    details = [c["detail"] for c in cells[(d1["head"], "serve")]["changes"]]
    assert any(f"replica d1 on {d1['head']}: unhealthy: {sick}/health" in d for d in details), details
    deadline = time.monotonic() + 30  # back in the slot's rotation once its health checks pass again
    while time.monotonic() < deadline and rc != 0:
        time.sleep(1)
        rc, doc = status(sim)
    assert rc == 0, doc


@pytest.fixture(scope="module")
def rolled(sim: Sim, served: dict[str, Any]) -> dict[str, Any]:
    set_pool_env(sim, "prefill", {"FAKE_VLLM_INIT_S": "1"})
    set_pool_env(sim, "decode", {"FAKE_VLLM_INIT_S": "1"})
    with BackgroundLoad(group_vars(sim)["gateway_url"], key(sim), MODEL, concurrency=4) as load:
        out = apply(sim, "serve")
    report = load.report
    assert out["exit"] == 0, json.dumps(out)[-4000:] + out["stderr"][-3000:]
    assert report is not None
    return {"out": out, "load": report.summary(), "before": served["ranks"], "after": ranks(sim)}


def test_each_pool_rolls_one_instance_at_a_time_under_load(
    rolled: dict[str, Any], record_property: Callable[[str, object], None]
) -> None:
    record_property("load", json.dumps(rolled["load"]))  # in the junit report (build/test-reports)
    rollout = rolled["out"]["rollout"]
    assert rollout["result"] == "ok", rollout
    assert rollout["batches"] == [["p1", "p2"], ["d1", "d2"]], rollout  # head servers a2-01, then a2-02
    reps = rollout["replicas"]
    for name in ("p1", "p2", "d1", "d2"):
        gates = [g["gate"] for g in reps[name]["gates"]]
        assert gates.count("health") == (1 if name.startswith("p") else 2), (name, gates)  # every rank
        assert ROUND_TRIP[0] in gates and ROUND_TRIP[1] in gates and gates[-1] == "gateway", (name, gates)
        assert ("pd_kv_freed" if name.startswith("p") else "pd_kv_pulled") in gates, (name, gates)
    # one instance out at a time: p2 starts after p1 is back, d1 after p2, d2 after d1
    order = [reps[n] for n in ("p1", "p2", "d1", "d2")]
    assert all(a["finished"] <= b["started"] for a, b in itertools.pairwise(order)), reps
    for k, c in rolled["after"].items():
        assert c["running"] and c["release"] != rolled["before"][k]["release"], k
    load = rolled["load"]
    assert load["failed"] == 0 and load["ok"] > 50, load


@pytest.mark.parametrize(
    ("pool", "fault", "gate"),
    [
        ("prefill", "FAKE_VLLM_WRONG_ENGINE_ID", "pd_decode"),
        ("prefill", "FAKE_VLLM_KV_NEVER_FREED", "pd_kv_freed"),
        ("decode", "FAKE_VLLM_KV_TRANSFER_FAILURE", "pd_decode"),
    ],
)
def test_a_pd_fault_fails_the_canary_round_trip_and_rolls_it_back(
    sim: Sim, rolled: dict[str, Any], pool: str, fault: str, gate: str
) -> None:
    before = ranks(sim)
    set_pool_env(sim, pool, {"FAKE_VLLM_INIT_S": "1", fault: "1"})
    try:
        out = apply(sim, "serve")
    finally:
        set_pool_env(sim, pool, {"FAKE_VLLM_INIT_S": "1"})
    assert out["exit"] == 3 and out["result"] == "failed", json.dumps(out)[-3000:]
    canary = "p1" if pool == "prefill" else "d1"
    rep = out["rollout"]["replicas"][canary]
    assert rep["failed_gate"] == gate and rep["result"] == "failed, restored", rep
    rollback = [g["gate"] for g in rep["rollback_gates"]]
    assert ROUND_TRIP[0] in rollback and rollback[-1] == "gateway", rollback
    assert len(out["rollout"]["replicas"]) == 1, out["rollout"]  # the later instances never rolled
    after = ranks(sim)
    for k, c in after.items():
        assert c["running"] and c["release"] == before[k]["release"], (k, c, before[k])
    ask(sim)


def test_rollback_of_a_decode_instance_takes_both_its_ranks_back(
    sim: Sim, served: dict[str, Any], rolled: dict[str, Any]
) -> None:
    before = ranks(sim)
    out = cli_json(sim, "rollback", sim.name, "--yes", "--replica", "d1")
    assert out["exit"] == 0, json.dumps(out)[-4000:] + out["stderr"][-3000:]
    assert out["rollout"]["replicas"]["d1"]["result"] == "rolled_back", out["rollout"]
    after = ranks(sim)
    for k, c in after.items():
        want = served["ranks"][k] if "/vllm-d1-" in k else before[k]  # d1 on the first release, as a unit
        assert c["running"] and c["release"] == want["release"], (k, c, want)
    ask(sim)


def test_bench_reports_ttft_and_itl_through_the_pd_gateway(sim: Sim, served: dict[str, Any]) -> None:
    """`orchestrator bench SITE` loads the PD gateway: every request is prefilled on a prefill rank and
    decoded on a decode rank; TTFT and ITL per level come from the streamed answers."""
    argv = [str(BIN / "orchestrator"), "bench", sim.name, "--concurrency", "1,4", "--requests", "8"]
    proc = run([*argv, "--max-tokens", "8", "--format", "json"], sim.root, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["via"] == "gateway" and out["endpoint"] == f"{group_vars(sim)['gateway_url']}/v1", out
    for lv in out["levels"]:
        assert lv["ok"] == 8 and lv["failed"] == 0, lv
        assert lv["ttft_ms"]["p50"] > 0 and lv["itl_ms"]["count"] > 0, lv
    assert key(sim) not in proc.stdout + proc.stderr
