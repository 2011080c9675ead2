"""The gateway and monitoring phases on a copy of the mx golden (goldens.py: `sim up --layout mixed --gateway
--monitoring`): 3 NPU servers with 3 replicas (one spanning a2-01 + a2-02, two on a2-03), an API key, gw-01
running vllm-router 0.1.17 (the PyPI wheel, built into an image on gw-01 FROM the simulator's base) and
mon-01 running Prometheus, converged by one `orchestrator apply` of every phase from bare servers. Then:

- the official `openai` client through the gateway gets completions and chat completions, streamed and not,
  with the replicas' key (401 from the replica without it: the router passes Authorization through);
- GET /list_workers lists every replica head; the key is nowhere in the router's container;
- a second apply of the gateway phase changes nothing and does not restart the router; check mode (plain
  ansible-playbook) reports nothing;
- a worker removed by hand is reported by check mode, then added back by plain ansible-playbook;
- 10 s of load through the gateway (load.py): no failed request, every head routable the whole time;
- another policy in the spec replaces the router container and the heads are added to the new one;
- a serving change rolls through the running router, canary first and one replica at a time, while clients
  send requests through it the whole time: no request fails, never fewer than 2 of 3 workers routable;
- with the fake vLLM's JIT model on (FAKE_VLLM_JIT_MS: the first request of each shape pays a compile), a
  rollout without warm-up leaves the first streamed chat through the gateway paying it; with warm-up (the
  default) every replica served the warm-up set before it was routable, the first request is fast, and the
  warm-up's time is in the apply's gates and the release records;
- Prometheus on mon-01 scrapes every target of every job (npu-exporter, node, vllm, vllm-router,
  prometheus) and holds one npu_chip_info_health_status series per simulated chip; a chip made unhealthy
  with `sim fault npu-unhealthy` reads 0 there; a second apply of the monitoring phase and check mode
  change nothing (Prometheus is stopped after these tests: goldens.quiet_monitoring)."""

from __future__ import annotations

import json
import re
import struct
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.sim import goldens
from tests.integration.sim.load import BackgroundLoad, run_load
from tests.integration.sim.serving_helpers import sh
from tests.integration.sim.sim_helpers import BIN, Sim, ansible_playbook, recap, run

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group(goldens.group("mx"))]

PIPELINE = ("preflight", "drivers", "host", "network", "image", "weights", "serve", "gateway", "monitoring")
MODEL = "sim-deepseek"
GW = "gw-01"
OUTPUTS: list[str] = []


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from goldens.module_golden(tmp_path_factory, "mx")


def apply_json(sim: Sim, *args: str) -> dict[str, Any]:
    argv = [str(BIN / "orchestrator"), "apply", sim.name, "--yes", "--format", "json", *args]
    proc = run(argv, sim.root, check=False, timeout=1800)
    OUTPUTS.append(proc.stdout + proc.stderr)
    assert proc.stdout.count("\n") == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(proc.stdout)
    assert proc.returncode == 0 and out["result"] == "ok", json.dumps(out)[-4000:]
    return out


def gateway_counts(out: dict[str, Any]) -> dict[str, int]:
    (phase,) = [p for p in out["phases"] if p["name"] == "gateway"]
    assert phase["status"] == "ok" and list(phase["hosts"]) == [GW], phase
    return dict(phase["hosts"][GW])


def group_vars(sim: Sim) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(
        (sim.root / "inventories" / sim.name / "group_vars" / "all.yml").read_text()
    )
    return data


def heads(sim: Sim) -> list[str]:
    """The replica heads' worker URLs from the plan (endpoint without /v1), not from the role's variables."""
    return sorted(r["endpoint"].removesuffix("/v1") for r in group_vars(sim)["rollout_replicas"])


def gateway_url(sim: Sim) -> str:
    url: str = group_vars(sim)["gateway_url"]
    return url


def api_key(sim: Sim) -> str:
    return (sim.state_dir / "api-key").read_text().strip()


def workers(sim: Sim) -> list[str]:
    with urllib.request.urlopen(f"{gateway_url(sim)}/list_workers", timeout=10) as resp:
        return sorted(json.loads(resp.read())["urls"])


def router_started_at(sim: Sim) -> str:
    rc, text = sh(sim, GW, "docker inspect -f '{{.State.Running}} {{.State.StartedAt}}' vllm-router")
    assert rc == 0 and text.startswith("true "), text
    return text.split()[1]


def plain_gateway_check(sim: Sim) -> tuple[int, str]:
    proc = ansible_playbook(
        sim.root, f"inventories/{sim.name}/hosts.yml", "gateway.yml", "--check", "--diff", timeout=600
    )
    OUTPUTS.append(proc.stdout + proc.stderr)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return recap(proc.stdout)[GW]["changed"], proc.stdout


@pytest.fixture(scope="module")
def applied(sim: Sim) -> dict[str, Any]:
    assert sim.converge is not None  # the golden's apply of every phase from bare servers
    OUTPUTS.append(sim.converge.stdout + sim.converge.stderr)
    assert sim.converge.returncode == 0 and sim.converge.stdout.count("\n") == 1, sim.converge.stdout[-3000:]
    first = json.loads(sim.converge.stdout)
    assert [p["name"] for p in first["phases"] if p["status"] == "ok"] == [*PIPELINE], json.dumps(first)[
        -4000:
    ]
    return {"counts": gateway_counts(first), "started": router_started_at(sim)}


def test_openai_client_through_the_gateway(sim: Sim, applied: dict[str, Any]) -> None:
    assert applied["counts"]["changed"] > 0, applied
    client = openai.OpenAI(base_url=f"{gateway_url(sim)}/v1", api_key=api_key(sim), max_retries=0, timeout=30)
    done = client.completions.create(model=MODEL, prompt="The capital of France is", max_tokens=8)
    assert done.choices[0].text and done.usage is not None and done.usage.completion_tokens == 8
    chat = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Hi"}], max_tokens=8
    )
    assert chat.choices[0].message.content
    text = "".join(
        c.choices[0].text
        for c in client.completions.create(model=MODEL, prompt="Count:", max_tokens=6, stream=True)
        if c.choices
    )
    assert text.strip()
    parts = [
        p.choices[0].delta.content or ""
        for p in client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "Hi"}], max_tokens=6, stream=True
        )
        if p.choices
    ]
    assert "".join(parts).strip() and len(parts) >= 6
    anonymous = openai.OpenAI(
        base_url=f"{gateway_url(sim)}/v1", api_key="not-the-key", max_retries=0, timeout=30
    )
    with pytest.raises(openai.AuthenticationError) as exc:
        anonymous.completions.create(model=MODEL, prompt="hi", max_tokens=2)
    assert exc.value.status_code == 401
    # the connection the 401 came back on still serves the next client (the router reuses it)
    for _ in range(6):
        assert client.completions.create(model=MODEL, prompt="again", max_tokens=2).choices[0].text


def test_the_router_lists_every_replica_head_and_holds_no_key(sim: Sim, applied: dict[str, Any]) -> None:
    assert len(heads(sim)) == 3
    assert workers(sim) == heads(sim)
    rc, text = sh(sim, GW, "docker inspect vllm-router")
    assert rc == 0 and api_key(sim) not in text
    (info,) = json.loads(text)
    assert info["HostConfig"]["NetworkMode"] == "host"
    assert info["HostConfig"]["RestartPolicy"]["Name"] == "unless-stopped"
    assert info["Config"]["Healthcheck"]["Test"][:2] == ["CMD", "python3"]
    args = group_vars(sim)["gateway_router_args"]
    port = args[args.index("--prometheus-port") + 1]
    addr = urllib.parse.urlparse(gateway_url(sim)).hostname
    with urllib.request.urlopen(f"http://{addr}:{port}/metrics", timeout=10) as resp:
        assert b"vllm_router_" in resp.read()


def test_a_second_apply_and_check_mode_change_nothing(sim: Sim, applied: dict[str, Any]) -> None:
    counts = gateway_counts(apply_json(sim, "--phases", "gateway"))
    assert counts["changed"] == 0, counts
    assert router_started_at(sim) == applied["started"]
    changed, out = plain_gateway_check(sim)
    assert changed == 0, out[-3000:]


NPU_SERVERS = ("a2-01", "a2-02", "a2-03")
MON = "mon-01"


def prometheus(sim: Sim, path: str, **params: str) -> Any:
    url = f"{group_vars(sim)['monitoring_prometheus_url']}{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=10) as resp:
        body = json.loads(resp.read())
    assert body["status"] == "success", body
    return body["data"]


def target_health(sim: Sim) -> dict[str, dict[str, str]]:
    """{job: {host label: health}} of Prometheus's active targets (a job with 2 targets on one host, like
    a2-03's two replicas, shows that host's worst)."""
    out: dict[str, dict[str, str]] = {}
    for t in prometheus(sim, "/api/v1/targets", state="active")["activeTargets"]:
        hosts = out.setdefault(t["labels"]["job"], {})
        if hosts.get(t["labels"]["host"]) in (None, "up"):
            hosts[t["labels"]["host"]] = t["health"]
    return out


def chip_health(sim: Sim) -> dict[tuple[str, str], str]:
    result = prometheus(sim, "/api/v1/query", query="npu_chip_info_health_status")["result"]
    return {(r["metric"]["host"], r["metric"]["id"]): r["value"][1] for r in result}


def eventually(probe: Any, want: Any, timeout_s: float) -> Any:
    """probe() until it returns want (Prometheus scrapes every 15 s in the sim spec) or timeout_s passes."""
    deadline = time.monotonic() + timeout_s
    got = probe()
    while got != want and time.monotonic() < deadline:
        time.sleep(1)
        got = probe()
    return got


def test_prometheus_scrapes_every_target_and_sees_an_unhealthy_npu(sim: Sim, applied: dict[str, Any]) -> None:
    # Expected targets from the cluster's layout (docs/monitoring.md), not from the rendered scrape jobs.
    up = dict.fromkeys(NPU_SERVERS, "up")
    want = {
        "npu-exporter": up,
        "node": {**up, MON: "up"},
        "vllm": {"a2-01": "up", "a2-03": "up"},  # heads: mn on a2-01, two replicas on a2-03
        "vllm-router": {GW: "up"},
        "prometheus": {MON: "up"},
    }
    assert eventually(lambda: target_health(sim), want, 60) == want
    # one series per chip: the /dev/davinciN nodes of each server
    chips = set()
    for host in NPU_SERVERS:
        rc, text = sh(sim, host, "ls /dev")
        assert rc == 0, text
        chips |= {(host, name.removeprefix("davinci")) for name in text.split() if name[7:].isdigit()}
    assert len(chips) == 24 and chip_health(sim) == dict.fromkeys(chips, "1")
    sim.sim("fault", "npu-unhealthy", "a2-02", "3")
    try:
        sick = {**dict.fromkeys(chips, "1"), ("a2-02", "3"): "0"}
        assert eventually(lambda: chip_health(sim), sick, 45) == sick
    finally:
        sim.sim("fault", "npu-unhealthy", "a2-02", "3", "--clear")
    assert eventually(lambda: chip_health(sim), dict.fromkeys(chips, "1"), 45) == dict.fromkeys(chips, "1")


def test_a_second_monitoring_apply_and_check_mode_change_nothing(sim: Sim, applied: dict[str, Any]) -> None:
    out = apply_json(sim, "--phases", "monitoring")
    (phase,) = [p for p in out["phases"] if p["name"] == "monitoring"]
    assert sorted(phase["hosts"]) == sorted([*NPU_SERVERS, MON]), phase
    assert all(c["changed"] == 0 for c in phase["hosts"].values()), phase
    proc = ansible_playbook(
        sim.root, f"inventories/{sim.name}/hosts.yml", "monitoring.yml", "--check", "--diff", timeout=600
    )
    OUTPUTS.append(proc.stdout + proc.stderr)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert {h: c["changed"] for h, c in recap(proc.stdout).items()} == dict.fromkeys([*NPU_SERVERS, MON], 0)


@pytest.fixture(scope="module")
def quiet(sim: Sim, applied: dict[str, Any]) -> None:
    """Prometheus stopped once the monitoring tests above ran (goldens.quiet_monitoring: its scrapes are
    the CPU an idle simulated cluster spends); the tests below read no Prometheus metric."""
    goldens.quiet_monitoring(sim)


def test_a_worker_removed_by_hand_is_reported_then_added_back(
    sim: Sim, applied: dict[str, Any], quiet: None
) -> None:
    gone = heads(sim)[0]
    req = urllib.request.Request(
        f"{gateway_url(sim)}/remove_worker?url={urllib.parse.quote(gone, safe='')}", method="POST"
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200
    assert gone not in workers(sim)
    changed, out = plain_gateway_check(sim)
    assert changed == 1 and f"would add {gone}" in out, out[-3000:]
    assert gone not in workers(sim)  # check mode changed nothing
    # the repair through plain ansible-playbook (the README's second way), not `orchestrator apply`
    proc = ansible_playbook(sim.root, f"inventories/{sim.name}/hosts.yml", "gateway.yml", timeout=600)
    OUTPUTS.append(proc.stdout + proc.stderr)
    assert proc.returncode == 0 and recap(proc.stdout)[GW]["changed"] == 1, proc.stdout[-3000:]
    assert workers(sim) == heads(sim)
    assert router_started_at(sim) == applied["started"]  # no restart to add a worker


def test_ten_seconds_of_load_through_the_gateway_fail_nothing(
    sim: Sim, applied: dict[str, Any], quiet: None
) -> None:
    report = run_load(gateway_url(sim), api_key(sim), MODEL, concurrency=8, seconds=10)
    summary = report.summary()
    print("load:", json.dumps(summary))
    assert report.failed == 0, summary
    assert report.ok >= 40 and set(report.by_kind) == {
        "completion",
        "chat",
        "completion-stream",
        "chat-stream",
    }
    assert report.min_workers == 3 and len(report.worker_samples) >= 20, summary


def test_another_policy_replaces_the_router_and_re_adds_the_heads(
    sim: Sim, applied: dict[str, Any], quiet: None
) -> None:
    site = sim.root / "inventories" / sim.name / "site.yaml"
    text = site.read_text()
    assert text.count("gateway:\n  enabled: true\n") == 1
    site.write_text(
        text.replace("gateway:\n  enabled: true\n", "gateway:\n  enabled: true\n  policy: consistent_hash\n")
    )
    changed, out = plain_gateway_check_after_render(sim)
    assert changed >= 1, out[-3000:]
    counts = gateway_counts(apply_json(sim, "--phases", "gateway"))
    assert counts["changed"] >= 2, counts  # the container, then the heads added to the new router
    assert router_started_at(sim) != applied["started"]
    _rc, cmd = sh(sim, GW, "docker inspect -f '{{json .Config.Cmd}}' vllm-router")
    argv = json.loads(cmd)
    assert argv[argv.index("--policy") + 1] == "consistent_hash"
    assert workers(sim) == heads(sim)
    client = openai.OpenAI(base_url=f"{gateway_url(sim)}/v1", api_key=api_key(sim), max_retries=0, timeout=30)
    assert client.completions.create(model=MODEL, prompt="after", max_tokens=2).choices[0].text
    assert gateway_counts(apply_json(sim, "--phases", "gateway"))["changed"] == 0


def plain_gateway_check_after_render(sim: Sim) -> tuple[int, str]:
    run([str(BIN / "orchestrator"), "render", sim.name], sim.root)
    return plain_gateway_check(sim)


def test_a_release_rolls_through_the_gateway_under_load_without_a_failed_request(
    sim: Sim, applied: dict[str, Any], quiet: None
) -> None:
    """A serving change (a new env variable: every replica's release changes) rolls canary first (mn, on its
    head a2-01), then a2-03, which rolls the two replicas it heads one after another, through the running
    router while 6 clients send requests through it the whole time: no request fails, the router always
    routes to at least replicas - 1 (2 of 3) workers, and every head is back in the router at the end."""
    site = sim.root / "inventories" / sim.name / "site.yaml"
    text = site.read_text()
    assert text.count("  max_num_seqs: 16\n") == 1, text
    site.write_text(text.replace("  max_num_seqs: 16\n", "  max_num_seqs: 16\n  env: {ROLLOUT_MARK: '2'}\n"))
    with BackgroundLoad(gateway_url(sim), api_key(sim), MODEL, concurrency=6) as load:
        time.sleep(3)
        out = apply_json(sim, "--phases", "serve")
        time.sleep(3)
    report = load.stop()
    summary = report.summary()
    print("rollout:", json.dumps(out.get("rollout")), "load:", json.dumps(summary))
    rollout = out["rollout"]
    assert rollout["result"] == "ok", rollout
    names = sorted(r["name"] for r in group_vars(sim)["rollout_replicas"])
    assert sorted(n for batch in rollout["batches"] for n in batch) == names
    assert rollout["batches"][0] == ["mn"] and len(rollout["batches"]) == 2, rollout  # by head server
    assert report.failed == 0, summary
    assert report.ok >= 30, summary
    assert report.min_workers == 2, summary  # one replica out at a time, never more
    assert max(n for _, n in report.worker_samples) == 3, summary
    assert workers(sim) == heads(sim)


def success_total(sim: Sim) -> float:
    """Requests the replicas finished (vLLM's vllm:request_success_total on every head, any reason but abort),
    parsed with prometheus_client's parser."""
    total = 0.0
    for head in heads(sim):
        with urllib.request.urlopen(f"{head}/metrics", timeout=10) as resp:
            text = resp.read().decode()
        for family in text_string_to_metric_families(text):
            total += sum(
                s.value
                for s in family.samples
                if s.name == "vllm:request_success_total" and s.labels.get("finished_reason") != "abort"
            )
    return total


def settled_success_total(sim: Sim) -> float:
    """success_total once two readings 1 s apart agree (requests of an earlier test still finishing)."""
    last = success_total(sim)
    for _ in range(30):
        time.sleep(1)
        now = success_total(sim)
        if now == last:
            return now
        last = now
    raise AssertionError(f"the replicas' request counters never settled (last {last})")


def test_bench_through_the_gateway_reports_levels_table_and_plot(
    sim: Sim, applied: dict[str, Any], quiet: None, tmp_path: Path
) -> None:
    """`orchestrator bench SITE` loads the gateway (not a replica) at two concurrency levels: every request
    succeeds, TTFT / ITL / throughput are reported per level, the replicas behind the router counted exactly
    the requests bench says it sent (plus its one warm-up request), the PNG is a real image, and the table
    names the gateway and the level."""
    before = settled_success_total(sim)
    png = tmp_path / "bench.png"
    argv = [str(BIN / "orchestrator"), "bench", sim.name, "--concurrency", "1,4", "--requests", "12"]
    proc = run([*argv, "--max-tokens", "8", "--format", "json", "--plot", str(png)], sim.root, check=False)
    OUTPUTS.append(proc.stdout + proc.stderr)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["via"] == "gateway" and out["endpoint"] == f"{gateway_url(sim)}/v1", out
    assert [lv["concurrency"] for lv in out["levels"]] == [1, 4]
    for lv in out["levels"]:
        assert lv["ok"] == 12 and lv["failed"] == 0, lv
        assert lv["ttft_ms"]["p50"] > 0 and lv["itl_ms"]["count"] > 0, lv
        assert lv["request_throughput_rps"] > 0 and lv["output_throughput_tps"] > 0, lv
    assert success_total(sim) - before == 24 + 1  # both levels + the warm-up, as the replicas counted them
    head = png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", head
    width, height = struct.unpack(">II", head[16:24])
    assert width >= 400 and height >= 300, (width, height)
    table = run([*argv[:-1], "2", "--max-tokens", "4"], sim.root, check=False)
    OUTPUTS.append(table.stdout + table.stderr)
    assert table.returncode == 0, table.stdout[-3000:] + table.stderr[-3000:]
    assert f"at {gateway_url(sim)}/v1 (gateway)" in table.stdout, table.stdout
    assert "concurrency 1 (" in table.stdout and "concurrency 4 (" in table.stdout, table.stdout


JIT_MS = 1500


def first_chat_ttft(sim: Sim) -> float:
    """Seconds to the first streamed token of a chat through the gateway (a shape the gates never send)."""
    client = openai.OpenAI(base_url=f"{gateway_url(sim)}/v1", api_key=api_key(sim), max_retries=0, timeout=60)
    start = time.monotonic()
    stream = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Name a prime number."}], max_tokens=4, stream=True
    )
    ttft = None
    for chunk in stream:
        if ttft is None and chunk.choices and chunk.choices[0].delta.content:
            ttft = time.monotonic() - start
    assert ttft is not None
    return ttft


def roll(sim: Sim, mark: str, warmup: bool) -> dict[str, Any]:
    """A new release of every replica with the JIT model on, rolled with warm-up on or off. The compile
    caches persist across releases of one serving configuration (the kernels the cold roll compiled would
    be there for the warm one), so the warm roll is another configuration (max_num_seqs 12): its caches
    start empty and its warm-up compiles every shape."""
    site = sim.root / "inventories" / sim.name / "site.yaml"
    lines = [ln for ln in site.read_text().splitlines(keepends=True) if not ln.startswith("  env: {")]
    text = "".join(lines).replace("  warmup: {enabled: false}\n", "")
    seqs = 12 if warmup else 16
    text = text.replace(
        "  max_num_seqs: 16\n",
        f"  max_num_seqs: {seqs}\n  env: {{ROLLOUT_MARK: '{mark}', FAKE_VLLM_JIT_MS: '{JIT_MS}'}}\n",
    )
    if not warmup:
        assert text.count("\nrollout:\n") == 1, text
        text = text.replace("\nrollout:\n", "\nrollout:\n  warmup: {enabled: false}\n")
    site.write_text(text)
    out = apply_json(sim, "--phases", "serve")
    assert out["rollout"]["result"] == "ok", out["rollout"]
    return out


def test_the_first_request_after_a_rollout_is_fast_only_with_warm_up(
    sim: Sim, applied: dict[str, Any], quiet: None, record_property: Callable[[str, object], None]
) -> None:
    cold = roll(sim, "jit-1", warmup=False)
    assert not any(g["gate"] == "warmup" for r in cold["rollout"]["replicas"].values() for g in r["gates"])
    for name, rep in cold["rollout"]["replicas"].items():  # no timeout in the spec: each server's last start
        (health,) = [g for g in rep["gates"] if g["gate"] == "health"]
        timeout = re.fullmatch(
            r"/health 200 within (\d+) s \(2 x its last start, [\d.]+ s, \+ 60 s\)", health["expected"]
        )
        # shorter than the plan's estimate, which is 180 s at least (orchestrator/planning/gates.py)
        assert timeout is not None and int(timeout[1]) < 180, (name, health)
    slow = first_chat_ttft(sim)
    assert slow >= JIT_MS / 1000, slow  # every replica is fresh: whichever the router picks compiles

    warm = roll(sim, "jit-2", warmup=True)
    # a2-03-a and a2-03-b share a2-03's compile cache (one configuration, the same ranks): the first one
    # rolled there compiles every shape, the second finds them compiled (its warm-up is short)
    first_on_server = {"mn", "a2-03-a"}
    for name, rep in warm["rollout"]["replicas"].items():
        (gate,) = [g for g in rep["gates"] if g["gate"] == "warmup"]
        if name not in first_on_server:
            assert gate["ok"], (name, gate)
            continue
        # every shape of the set compiled once in the first round (but the short completion, which the
        # completion gate compiled before), then rounds until settled (or, on a busy machine, 5 rounds
        # within the budget)
        assert gate["ok"] and gate["seconds"] >= 4 * JIT_MS / 1000, (name, gate)
        assert re.match(r"settled after [345] rounds|not settled after 5 rounds", gate["seen"]), (name, gate)
    fast = first_chat_ttft(sim)
    timing = {"ttft_without_warmup_s": round(slow, 3), "ttft_with_warmup_s": round(fast, 3)}
    timing |= {
        f"warmup_s_{n}": next(g["seconds"] for g in r["gates"] if g["gate"] == "warmup")
        for n, r in warm["rollout"]["replicas"].items()
    }
    timing |= {
        f"{k}_{which}": ro["rollout"].get(k)
        for which, ro in (("without", cold), ("with", warm))
        for k in ("wall_s", "ready_sum_s", "warmup_s", "soak_s")
    }
    record_property("warmup", json.dumps(timing))  # in the junit report (build/test-reports)
    assert fast < JIT_MS / 1000 / 2, (fast, slow)
    rc, text = sh(sim, "a2-01", "cat /var/lib/ascend-orchestrator/releases/vllm-mn.json")
    assert rc == 0, text
    assert json.loads(text)["current"]["warmup_s"] >= 4 * JIT_MS / 1000, text
    assert workers(sim) == heads(sim)


def test_the_key_is_in_no_output(sim: Sim, applied: dict[str, Any]) -> None:
    key = api_key(sim)
    assert OUTPUTS and not [o for o in OUTPUTS if key in o]
