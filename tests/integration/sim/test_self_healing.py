"""Back by itself after a reboot or a crash, on a copy of the mx golden (goldens.py: `sim up --layout mixed
--gateway --monitoring`): replica mn spans a2-01 (head) + a2-02 (headless DP ranks), a2-03 heads a2-03-a and
a2-03-b, gw-01 runs vllm-router. The copy is restored without its after-restore gateway apply: a restored
cluster is a rebooted one, so every server, the gateway host included, has just booted.

- after the reboot every replica serves again by itself (Docker's restart policy), and the router, which
  keeps its workers in memory, starts empty: the scheduled drift run with --heal (`orchestrator drift SITE
  --heal`, what `drift schedule --heal` installs) finds the gateway drift, heals it by adding the heads back
  without restarting any replica, and clients get answers through the gateway;
- a head process killed on a2-03 (a crash, not `docker stop`) is restarted by Docker and serves through the
  gateway again, with no orchestrator run;
- a member of the multi-server replica that stays down (its container stopped on a2-02) leaves mn's head
  unhealthy; the heal restarts mn as a unit (members, then head) through the gates and back into the router,
  touches no other replica, keeps the release records' rollback target and records a "heal" run; the
  member's lost compile cache is copied from a server that has its key (planted on a2-03) before it starts
  (its log says it loaded the compiled graphs), cache directories no release names are pruned; a second heal
  finds nothing to do."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.sim import goldens
from tests.integration.sim.serving_helpers import sh
from tests.integration.sim.sim_helpers import BIN, Sim, run

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group(goldens.group("mx"))]

MODEL = "sim-deepseek"
GW = "gw-01"
CACHE = "/var/cache/ascend-orchestrator/compile"
CONTAINERS = {"a2-01": ["vllm-mn"], "a2-02": ["vllm-mn"], "a2-03": ["vllm-a2-03-a", "vllm-a2-03-b"]}


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    """A restored (rebooted) copy; Prometheus stopped (goldens.quiet_monitoring: no test here reads it)."""
    for sim in goldens.module_golden(tmp_path_factory, "mx", after_restore=False):
        goldens.quiet_monitoring(sim)
        yield sim


def group_vars(sim: Sim) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(
        (sim.root / "inventories" / sim.name / "group_vars" / "all.yml").read_text()
    )
    return data


def heads(sim: Sim) -> dict[str, str]:
    """{replica: worker URL} from the rendered plan."""
    return {r["name"]: r["endpoint"].removesuffix("/v1") for r in group_vars(sim)["rollout_replicas"]}


def workers(sim: Sim) -> list[str]:
    with urllib.request.urlopen(f"{group_vars(sim)['gateway_url']}/list_workers", timeout=10) as resp:
        return sorted(json.loads(resp.read())["urls"])


def started(sim: Sim) -> dict[tuple[str, str], str]:
    """(server, container) -> State.StartedAt of every serving container."""
    out = {}
    for server, names in CONTAINERS.items():
        for name in names:
            fmt = "'{{.State.Running}} {{.State.StartedAt}}'"
            rc, text = sh(sim, server, f"docker inspect -f {fmt} {name}")
            assert rc == 0, text
            out[(server, name)] = text.strip()
    return out


def served(url: str) -> float:
    """Requests this replica finished (vllm:request_success_total on its head, any reason but abort)."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "vllm:request_success_total" and s.labels.get("finished_reason") != "abort"
    )


def chats_until_served_by(sim: Sim, url: str, tries: int = 30) -> int:
    """Chats through the gateway (the official client) until the replica at ``url`` counted one; how many."""
    key = (sim.state_dir / "api-key").read_text().strip()
    client = openai.OpenAI(
        base_url=f"{group_vars(sim)['gateway_url']}/v1", api_key=key, max_retries=0, timeout=60
    )
    before = served(url)
    for n in range(1, tries + 1):
        reply = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": f"Say {n}."}], max_tokens=4
        )
        assert reply.choices[0].message.content, reply
        if served(url) > before:
            return n
    raise AssertionError(f"{tries} chats through the gateway, none served by {url}")


def drift_heal(sim: Sim) -> tuple[int, str]:
    argv = [str(BIN / "orchestrator"), "drift", sim.name, "--phases", "serve,gateway", "--heal"]
    proc = run(argv, sim.root, check=False, timeout=1200)
    return proc.returncode, proc.stdout + proc.stderr


def history(sim: Sim) -> list[dict[str, Any]]:
    argv = [str(BIN / "orchestrator"), "history", sim.name, "--format", "json", "--last", "5"]
    out: list[dict[str, Any]] = json.loads(run(argv, sim.root).stdout)
    return out


def last_rollout(sim: Sim) -> dict[str, Any]:
    """The rollout summary of the newest run (its run.json, what `--format json` prints)."""
    (artifacts,) = [r["artifacts"] for r in history(sim)[:1]]
    rollout: dict[str, Any] = json.loads((Path(artifacts) / "run.json").read_text())["rollout"]
    return rollout


def test_after_a_reboot_replicas_serve_by_themselves_and_the_heal_run_refills_the_gateway(sim: Sim) -> None:
    assert workers(sim) == []  # vllm-router keeps its workers in memory: the rebooted gateway host has none
    before = started(sim)
    assert all(v.startswith("true ") for v in before.values()), before  # back by Docker's restart policy
    rc, out = drift_heal(sim)
    assert rc == 0, out[-4000:]
    assert "heal: the serve or gateway phase drifted" in out, out[-4000:]
    assert workers(sim) == sorted(heads(sim).values()), out[-3000:]
    assert started(sim) == before  # the replicas ran: nothing restarted
    for url in heads(sim).values():
        chats_until_served_by(sim, url)
    kinds = [r["kind"] for r in history(sim)[:2]]
    assert kinds == ["heal", "drift"], kinds


def test_a_crashed_head_is_restarted_by_docker_and_serves_through_the_gateway(sim: Sim) -> None:
    url = heads(sim)["a2-03-a"]
    rc, text = sh(sim, "a2-03", "kill -9 $(docker inspect -f '{{.State.Pid}}' vllm-a2-03-a)")
    assert rc == 0, text
    health = goldens.wait_replicas(sim, 120)
    assert set(health.values()) == {200}, health
    rc, text = sh(sim, "a2-03", "docker inspect -f '{{.RestartCount}}' vllm-a2-03-a")
    assert rc == 0 and int(text) >= 1, text
    assert url in workers(sim)
    chats_until_served_by(sim, url)
    assert [r["kind"] for r in history(sim)[:1]] == ["heal"]  # no orchestrator run since the last test


def test_a_multi_server_replica_with_a_member_down_is_healed_as_a_unit(sim: Sim) -> None:
    rc, text = sh(sim, "a2-02", "docker stop vllm-mn")  # stopped: Docker's policy does not restart it
    assert rc == 0, text
    # its compile cache lost too. In this layout no other server runs the same DP ranks of the configuration
    # (the key: the head's ranks differ), so a peer that does is planted: a2-03 gets a copy, as another
    # replica's member would have it. The heal copies it back before the member starts; a directory no
    # release names is pruned, on a2-02 (planted) and on a2-03 (the copy)
    rc, text = sh(sim, "a2-02", f"ls {CACHE}")
    assert rc == 0 and len(text.split()) == 1, text
    (key,) = text.split()
    rc, a203 = sh(sim, "a2-03", f"ls {CACHE}")
    assert rc == 0 and key not in a203.split(), a203  # the head's and a2-03's replicas have other keys
    rc, packed = sh(sim, "a2-02", f"tar czf - -C {CACHE} {key} | base64 -w0")
    assert rc == 0, packed
    rc, text = sh(sim, "a2-03", f"echo {packed} | base64 -d | tar xzf - -C {CACHE} && ls {CACHE}/{key}")
    assert rc == 0, text
    rc, text = sh(sim, "a2-02", f"rm -rf {CACHE}/* && mkdir {CACHE}/{'0' * 16}")
    assert rc == 0, text
    rc, record = sh(sim, "a2-01", "cat /var/lib/ascend-orchestrator/releases/vllm-mn.json")
    assert rc == 0, record
    before, previous = started(sim), json.loads(record)["previous"]
    rc, out = drift_heal(sim)
    assert rc == 0, out[-4000:]
    assert "batch 1/1 replica mn: gate health ok" in out, out[-4000:]
    rollout = last_rollout(sim)
    assert rollout["result"] == "ok" and {k: v["result"] for k, v in rollout["replicas"].items()} == {
        "mn": "healed"
    }, rollout
    after = started(sim)
    mn = [k for k in after if k[1] == "vllm-mn"]
    assert all(after[k] != before[k] and after[k].startswith("true ") for k in mn), after
    assert {k: v for k, v in after.items() if k not in mn} == {k: v for k, v in before.items() if k not in mn}
    rc, record = sh(sim, "a2-01", "cat /var/lib/ascend-orchestrator/releases/vllm-mn.json")
    assert rc == 0 and json.loads(record)["previous"] == previous, record  # the rollback target is kept
    assert json.loads(record)["current"]["ready_s"] > 0, record
    assert "Compile cache | unpack it on the receiving server" in out, out[-3000:]
    loaded = "docker logs vllm-mn 2>&1 | grep -c 'Directly load the compiled graph'"
    rc, text = sh(sim, "a2-02", f"ls {CACHE}; {loaded}")
    assert rc == 0 and text.split() == [key, "1"], text  # seeded, the stale one pruned, and the graphs loaded
    rc, text = sh(sim, "a2-03", f"ls {CACHE}")
    assert rc == 0 and text.split() == a203.split(), text  # the copy no release names there: pruned
    assert workers(sim) == sorted(heads(sim).values())
    chats_until_served_by(sim, heads(sim)["mn"])
    assert [r["kind"] for r in history(sim)[:2]] == ["heal", "drift"]

    proc = run([str(BIN / "orchestrator"), "heal", sim.name, "--format", "json"], sim.root, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    again = json.loads(proc.stdout)
    changed = {h: s["changed"] for p in again["phases"] for h, s in p["hosts"].items() if s["changed"]}
    assert changed == {} and not (again.get("rollout") or {}).get("replicas"), json.dumps(again)[-3000:]
    assert started(sim) == after
