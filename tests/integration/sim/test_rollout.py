"""The serve phase's rolling update on a copy of the mx golden (goldens.py: `sim up --layout mixed --gateway
--monitoring`): replica mn spans a2-01 + a2-02 (head + headless), a2-03 holds a2-03-a and a2-03-b. The
copy's spec turns the gateway off (the gateway's tests drive the router). One `orchestrator apply` of every
phase from bare servers, then `--phases serve` applies of spec changes:

- a config change (serving.env, and model.storage: nfs, which renders --safetensors-load-strategy prefetch)
  rolls through in batches of head servers (serial [1, 1]): the canary mn
  first, alone, as a unit on its head a2-01 (both of its containers replaced), then a2-03, which rolls the
  two replicas it heads one after another (a2-03-b stops only after a2-03-a passed its gates); the release
  records keep the previous release with its full container parameters;
- a new release that carries a fault (FAKE_VLLM_* in serving.env: never healthy, wrong answers, logprobs
  5 % off, crash after start) fails the canary at its own gate: exit 3 naming replica, gate, expected and
  seen and the containers' log lines; the canary runs its previous release again (same release label,
  healthy), the other replicas are untouched (not restarted);
- `orchestrator rollback` takes every replica back to the release before the config change through the
  same gates; a second rollback says there is no previous release and exits 3;
- `--limit` that holds a2-02 but not a2-01 (mn's head) fails on a2-02 naming a2-01 instead of silently
  leaving mn on its old release."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import openai
import pytest
import yaml

from tests.integration.sim import goldens
from tests.integration.sim.serving_helpers import sh
from tests.integration.sim.sim_helpers import BIN, Sim, run

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group(goldens.group("mx"))]

PIPELINE = ("preflight", "drivers", "host", "network", "image", "weights", "serve", "gateway", "monitoring")
MODEL = "sim-deepseek"
CONTAINERS = {"a2-01": ["vllm-mn"], "a2-02": ["vllm-mn"], "a2-03": ["vllm-a2-03-a", "vllm-a2-03-b"]}
GATES = "  gates: {startup_timeout_s: 30, soak_s: 6, latency_budget_s: 10}\n"
# the config change: a slower init, and the weights on NFS (the simulated servers mount them as NFS: the fake
# vLLM's loader reads FAKE_VLLM_FS_TYPE where vLLM reads /proc/mounts), which the spec says with model.storage
ROLLED = {"FAKE_VLLM_INIT_S": "2", "FAKE_VLLM_FS_TYPE": "nfs"}
PREFETCH = "Prefetching checkpoint files into page cache started"
# what a startup progress line may say (module_utils/vllm_startup.py)
PHASES = ("loading", "prefetching", "weights loaded", "compiling", "compiled graphs", "graphs compiled")
PHASES += ("capturing ACL graphs", "graphs captured", "API server", "starting (no phase")


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    """A copy of the mixed-layout golden, served by one apply of every phase from bare servers."""
    for sim in goldens.module_golden(tmp_path_factory, "mx", after_restore=False):
        yield goldens.gateway_off(sim)


def site_text(sim: Sim) -> str:
    return (sim.root / "inventories" / sim.name / "site.yaml").read_text()


def set_env(sim: Sim, env: dict[str, str]) -> None:
    """serving.env of the spec (every replica's container env: a new release)."""
    site = sim.root / "inventories" / sim.name / "site.yaml"
    lines = [ln for ln in site.read_text().splitlines(keepends=True) if not ln.startswith("  env: {FAKE")]
    text = "".join(lines)
    if env:
        inner = ", ".join(f"{k}: '{v}'" for k, v in env.items())
        text = text.replace("  max_num_seqs: 16\n", f"  max_num_seqs: 16\n  env: {{{inner}}}\n")
    site.write_text(text)


def cli_json(sim: Sim, *args: str) -> dict[str, Any]:
    argv = [str(BIN / "orchestrator"), *args, "--format", "json"]
    return parse(run(argv, sim.root, check=False, timeout=1800))


def parse(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.stdout.count("\n") == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(proc.stdout)
    out["exit"] = proc.returncode
    out["stderr"] = proc.stderr
    return out


def serve(sim: Sim) -> dict[str, Any]:
    return cli_json(sim, "apply", sim.name, "--yes", "--phases", "serve")


def inspect(sim: Sim, server: str, name: str) -> dict[str, Any]:
    """`docker inspect NAME` on the server. Docker's exec API now and then loses the start of a long output
    (the JSON then begins mid-document): read it again rather than fail on the transport."""
    for _ in range(3):
        rc, text = sh(sim, server, f"docker inspect {name}")
        assert rc == 0, (server, name, text)
        try:
            (info,) = json.loads(text)
        except json.JSONDecodeError:
            continue
        return dict(info)
    raise AssertionError(f"docker inspect {name} on {server} never returned whole JSON: {text[:300]}")


def containers(sim: Sim) -> dict[str, dict[str, Any]]:
    """server/container -> running, started, release label, env."""
    out = {}
    for server, names in CONTAINERS.items():
        for name in names:
            info = inspect(sim, server, name)
            out[f"{server}/{name}"] = {
                "running": info["State"]["Running"],
                "started": info["State"]["StartedAt"],
                "release": info["Config"]["Labels"]["io.ascend-orchestrator.release"],
                "env": dict(e.split("=", 1) for e in info["Config"]["Env"]),
            }
    return out


def record(sim: Sim, server: str, name: str) -> dict[str, Any]:
    rc, text = sh(sim, server, f"cat /var/lib/ascend-orchestrator/releases/{name}.json")
    assert rc == 0, text
    data: dict[str, Any] = json.loads(text)
    return data


def answers(sim: Sim) -> None:
    group = yaml.safe_load((sim.root / "inventories" / sim.name / "group_vars" / "all.yml").read_text())
    key = (sim.state_dir / "api-key").read_text().strip()
    for rep in group["rollout_replicas"]:
        client = openai.OpenAI(base_url=rep["endpoint"], api_key=key, max_retries=0, timeout=30)
        done = client.completions.create(model=MODEL, prompt="The capital of France is", max_tokens=4)
        assert done.choices[0].text, rep["name"]


@pytest.fixture(scope="module")
def deployed(sim: Sim) -> dict[str, Any]:
    site = sim.root / "inventories" / sim.name / "site.yaml"
    text = site_text(sim)
    assert "rollout:\n  canary: 1\n  batch_size: 1\n" in text
    site.write_text(
        text.replace(
            "rollout:\n  canary: 1\n  batch_size: 1\n", "rollout:\n  canary: 1\n  batch_size: 1\n" + GATES
        )
    )
    assert sim.converge is not None  # the golden's apply of every phase from bare servers
    first = parse(sim.converge)
    ran = [p["name"] for p in first["phases"] if p["status"] == "ok"]
    assert first["exit"] == 0 and ran == [*PIPELINE], json.dumps(first)[-4000:]
    assert first["rollout"] is None  # a first deploy starts every replica at once: nothing rolls
    baselines = list((sim.root / ".orchestrator" / "baselines" / sim.name).glob(f"{MODEL}-*.json"))
    assert len(baselines) == 1, baselines
    return {"first": containers(sim), "baseline": json.loads(baselines[0].read_text())}


@pytest.fixture(scope="module")
def rolled(sim: Sim, deployed: dict[str, Any]) -> dict[str, Any]:
    site = sim.root / "inventories" / sim.name / "site.yaml"
    text = site.read_text()
    assert text.count("\n  weights_path: ") == 1, text
    site.write_text(text.replace("\n  weights_path: ", "\n  storage: nfs\n  weights_path: "))
    set_env(sim, ROLLED)
    # a progress line a second while a replica starts (its phase from the container log)
    text = site.read_text()
    assert text.count(GATES) == 1
    progress = GATES.replace("latency_budget_s: 10}", "latency_budget_s: 10, progress_interval_s: 1}")
    site.write_text(text.replace(GATES, progress))
    out = serve(sim)
    assert out["exit"] == 0, json.dumps(out)[-4000:] + out["stderr"][-3000:]
    return {"out": out, "after": containers(sim)}


def test_first_deploy_records_full_params_and_the_accuracy_baseline(
    sim: Sim, deployed: dict[str, Any]
) -> None:
    # the head's start to /health 200 (the next rollout's startup timeout); a headless member has no API
    assert record(sim, "a2-01", "vllm-mn")["current"]["ready_s"] > 0
    rec = record(sim, "a2-02", "vllm-mn")["current"]
    assert rec["ready_s"] is None
    params = rec["params"]
    assert params["image"].startswith("sha256:") and params["command"][0] == "vllm", params
    assert (
        "--headless" in params["command"]
        and params["env"]["VLLM_API_KEY_FILE"] == "/run/secrets/vllm-api-key"
    )
    assert {"devices", "volumes", "shm_size", "labels", "cpuset_cpus"} <= set(params)
    key = (sim.state_dir / "api-key").read_text().strip()
    assert key not in json.dumps(rec)
    # the baseline: the fixed prompts' temperature-0 answers with top logprobs
    assert all(s["tokens"] and s["top_logprobs"] for s in deployed["baseline"].values()), deployed["baseline"]


def test_config_change_rolls_canary_first_then_batches_multinode_as_a_unit(
    sim: Sim, deployed: dict[str, Any], rolled: dict[str, Any]
) -> None:
    rollout = rolled["out"]["rollout"]
    assert rollout["result"] == "ok", rollout
    assert rollout["batches"] == [["mn"], ["a2-03-a", "a2-03-b"]], rollout
    for name in ("mn", "a2-03-a", "a2-03-b"):
        gates = [g["gate"] for g in rollout["replicas"][name]["gates"]]
        soak = ["soak"] if name == "mn" else []  # rollout.gates.soak_batches first: the canary batch only
        assert gates == ["health", "models", "completion", "accuracy", *soak, "warmup"], (name, gates)
        assert rollout["replicas"][name]["result"] == "updated"
    before, after = deployed["first"], rolled["after"]
    for key, c in after.items():
        assert c["running"] and c["started"] != before[key]["started"], key
        assert c["release"] != before[key]["release"] and c["env"]["FAKE_VLLM_INIT_S"] == "2", key
    # the multi-node replica rolls as a unit on its head: both members started in batch 1, before a2-03's
    assert max(after["a2-01/vllm-mn"]["started"], after["a2-02/vllm-mn"]["started"]) < min(
        after["a2-03/vllm-a2-03-a"]["started"], after["a2-03/vllm-a2-03-b"]["started"]
    )
    # a2-03 heads two replicas: a2-03-b is replaced only after a2-03-a passed every gate (one out at a time)
    reps = rollout["replicas"]
    assert reps["a2-03-a"]["finished"] <= reps["a2-03-b"]["started"], reps
    for server, name in (("a2-01", "vllm-mn"), ("a2-02", "vllm-mn"), ("a2-03", "vllm-a2-03-b")):
        rec = record(sim, server, name)
        assert rec["current"]["release"] == after[f"{server}/{name}"]["release"]
        assert rec["previous"]["release"] == before[f"{server}/{name}"]["release"]
        assert "FAKE_VLLM_INIT_S" not in rec["previous"]["params"]["env"]
        # the warm-up's time of each API server (a headless member has none)
        warmup_s = rec["current"]["warmup_s"]
        assert warmup_s is None if server == "a2-02" else warmup_s > 0, (server, rec["current"])
    # weights on NFS, a checkpoint that fits in memory: every engine prefetches (model.storage: nfs)
    for server, name in (("a2-01", "vllm-mn"), ("a2-02", "vllm-mn"), ("a2-03", "vllm-a2-03-a")):
        command = inspect(sim, server, name)["Config"]["Cmd"]
        assert command[command.index("--safetensors-load-strategy") + 1] == "prefetch", (server, command)
        rc, log = sh(sim, server, f"docker logs {name} 2>&1")
        assert rc == 0 and f"{PREFETCH} (in background, num_threads=8" in log, (server, log[-2000:])
        assert "Filesystem type for checkpoints: NFS." in log, (server, log[-2000:])
    # while each replica started, apply printed its phase from the container log (progress_interval_s: 1)
    starting = re.findall(r"replica (\S+): vllm-\S+ starting for \d+ s: (.+)", rolled["out"]["stderr"])
    assert {name for name, _ in starting} == {"mn", "a2-03-a", "a2-03-b"}, rolled["out"]["stderr"][-3000:]
    assert all(phase.startswith(PHASES) for _, phase in starting), starting
    assert any(not phase.startswith("starting (no phase") for _, phase in starting), starting
    answers(sim)


@pytest.mark.parametrize(
    ("fault", "gate"),
    [
        ({"FAKE_VLLM_NEVER_HEALTHY": "1"}, "health"),
        ({"FAKE_VLLM_WRONG_ANSWERS": "1"}, "completion"),
        ({"FAKE_VLLM_LOGPROB_SHIFT": "0.05"}, "accuracy"),
        ({"FAKE_VLLM_CRASH_AFTER_S": "3.5"}, "soak"),
    ],
)
def test_a_canary_fault_rolls_back_that_batch_only_and_exits_3_naming_the_gate(
    sim: Sim, rolled: dict[str, Any], fault: dict[str, str], gate: str
) -> None:
    before = containers(sim)
    set_env(sim, {**ROLLED, **fault})
    try:
        out = serve(sim)
    finally:
        set_env(sim, ROLLED)
    assert out["exit"] == 3 and out["result"] == "failed", json.dumps(out)[-3000:]
    rollout = out["rollout"]
    assert rollout["result"] == "failed" and rollout["batches"] == [["mn"]], rollout
    mn = rollout["replicas"]["mn"]
    assert mn["failed_gate"] == gate and mn["result"] == "failed, restored", mn
    assert [g["gate"] for g in mn["rollback_gates"]] == [
        "health",
        "models",
        "completion",
        "accuracy",
        "soak",
        "warmup",
    ]
    (failure,) = [f for f in out["failures"] if f["host"] == "a2-01"]  # mn's head rolls it
    msg = failure["message"]
    assert f"batch 1/2 replica mn: gate {gate} failed: expected " in msg and ", seen " in msg, msg
    if gate == "health":  # the spec's timeout stands over the servers' history (GATES sets it)
        assert "expected /health 200 within 30 s (rollout.gates.startup_timeout_s)" in msg, msg
    assert "Rolled back: mn runs its previous release again" in msg, msg
    assert "log lines of vllm-mn on a2-01" in msg and "log lines of vllm-mn on a2-02" in msg, msg
    after = containers(sim)
    for key in ("a2-01/vllm-mn", "a2-02/vllm-mn"):  # back on the release of before, healthy, restarted
        assert after[key]["running"] and after[key]["release"] == before[key]["release"], key
        assert after[key]["started"] != before[key]["started"] and not set(fault) & set(after[key]["env"])
    for key in ("a2-03/vllm-a2-03-a", "a2-03/vllm-a2-03-b"):  # never in a batch: untouched
        assert after[key] == before[key], key
    assert record(sim, "a2-01", "vllm-mn")["current"]["release"] == before["a2-01/vllm-mn"]["release"]
    answers(sim)


def test_rollback_restores_the_previous_release_then_has_none(
    sim: Sim, deployed: dict[str, Any], rolled: dict[str, Any]
) -> None:
    out = cli_json(sim, "rollback", sim.name, "--yes")
    assert out["exit"] == 0, json.dumps(out)[-4000:] + out["stderr"][-3000:]
    assert out["rollout"]["batches"] == [["mn"], ["a2-03-a", "a2-03-b"]], out["rollout"]
    assert {r["result"] for r in out["rollout"]["replicas"].values()} == {"rolled_back"}
    after = containers(sim)
    for key, c in after.items():
        assert c["running"] and c["release"] == deployed["first"][key]["release"], key
        assert "FAKE_VLLM_INIT_S" not in c["env"]
    rec = record(sim, "a2-03", "vllm-a2-03-a")
    assert rec["previous"] is None and rec["current"]["release"] == after["a2-03/vllm-a2-03-a"]["release"]
    answers(sim)
    again = cli_json(sim, "rollback", sim.name, "--yes", "--replica", "a2-03-a")
    assert again["exit"] == 3, json.dumps(again)[-3000:]
    text = json.dumps(again["failures"])
    assert "no previous release for replica a2-03-a" in text and "Fix:" in text, text
    assert containers(sim) == after  # nothing restarted


def test_a_limit_that_splits_a_replica_fails_naming_the_server_left_out(
    sim: Sim, deployed: dict[str, Any], rolled: dict[str, Any]
) -> None:
    set_env(sim, {"FAKE_VLLM_INIT_S": "2"})  # a new release for every replica
    before = containers(sim)
    out = cli_json(sim, "apply", sim.name, "--yes", "--phases", "serve", "--limit", "a2-02")
    assert out["exit"] == 3, json.dumps(out)[-3000:]
    (failure,) = out["failures"]
    msg = " ".join(failure["message"].split())
    assert failure["host"] == "a2-02" and "release of replica mn changed" in msg, failure
    assert "Fix: add a2-01 to --limit" in msg, msg
    assert out["rollout"] is None and containers(sim) == before  # nothing rolled, nothing restarted
