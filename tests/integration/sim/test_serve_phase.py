"""The serve phase on a copy of the mx golden (goldens.py: 3 servers in the mixed layout, a gateway and a
monitoring host; the copy's spec turns the gateway off): a multi-node DP replica on a2-01 + a2-02 (head +
headless), a2-03 holding two replicas on disjoint NPUs, and an API key in a secret file. One `orchestrator
apply` of every phase from bare servers, then `orchestrator apply --phases serve` again and again:

- every replica answers the official `openai` client (completion and chat completion) with the key, 401
  without it;
- a no-op re-apply changes nothing and restarts nothing (container start times unchanged);
- a changed argument of one replica (its port, in the spec) restarts that replica only;
- a wrong device mask, a mask the fake vLLM refuses and a missing /dev/davinciN fail the phase naming the
  server and the device;
- the key is in no inventory file, ansible-runner artifact, `docker inspect`, container log or output."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
import yaml

from tests.integration.sim import goldens
from tests.integration.sim.serving_helpers import host_vars, sh
from tests.integration.sim.sim_helpers import BIN, ENV, Sim, ansible_playbook, recap, run

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group(goldens.group("mx"))]

SERVERS = ["a2-01", "a2-02", "a2-03"]
PIPELINE = ("preflight", "drivers", "host", "network", "image", "weights", "serve", "gateway", "monitoring")
MODEL = "sim-deepseek"
CONTAINERS = {"a2-01": ["vllm-mn"], "a2-02": ["vllm-mn"], "a2-03": ["vllm-a2-03-a", "vllm-a2-03-b"]}
OUTPUTS: list[str] = []  # every apply / playbook output of this module, for the secret grep


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    """A copy of the mixed-layout golden, served by one apply of every phase from bare servers."""
    for sim in goldens.module_golden(tmp_path_factory, "mx", after_restore=False):
        yield goldens.gateway_off(sim)


def apply_json(sim: Sim, *args: str) -> dict[str, Any]:
    argv = [str(BIN / "orchestrator"), "apply", sim.name, "--yes", "--format", "json", *args]
    return parse(run(argv, sim.root, check=False, timeout=1800))


def parse(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    OUTPUTS.append(proc.stdout + proc.stderr)
    assert proc.stdout.count("\n") == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(proc.stdout)
    out["exit"] = proc.returncode
    return out


def serve_counts(out: dict[str, Any]) -> dict[str, dict[str, int]]:
    assert out["exit"] == 0 and out["result"] == "ok", json.dumps(out)[-4000:]
    (phase,) = [p for p in out["phases"] if p["name"] == "serve"]
    hosts = phase["hosts"]
    assert phase["status"] == "ok" and sorted(hosts) == SERVERS, phase
    return hosts


def started_at(sim: Sim) -> dict[str, str]:
    out = {}
    for server, names in CONTAINERS.items():
        for name in names:
            rc, text = sh(
                sim, server, f"docker inspect -f '{{{{.State.Running}}}} {{{{.State.StartedAt}}}}' {name}"
            )
            assert rc == 0 and text.startswith("true "), (server, name, text)
            out[f"{server}/{name}"] = text.split()[1]
    return out


def container_states(sim: Sim) -> dict[str, str]:
    """Per container: running or not, and since when (no container may have been touched)."""
    fmt = "'{{.State.Status}} {{.State.StartedAt}}'"
    return {
        f"{server}/{name}": sh(sim, server, f"docker inspect -f {fmt} {name} 2>&1")[1].strip()
        for server, names in CONTAINERS.items()
        for name in names
    }


def endpoints(sim: Sim) -> dict[str, str]:
    group = yaml.safe_load((sim.root / "inventories" / sim.name / "group_vars" / "all.yml").read_text())
    return {r["name"]: r["endpoint"] for r in group["rollout_replicas"]}


def api_key(sim: Sim) -> str:
    return (sim.state_dir / "api-key").read_text().strip()


@pytest.fixture(scope="module")
def served(sim: Sim) -> dict[str, Any]:
    assert sim.converge is not None
    first = parse(sim.converge)  # every phase that exists, from bare servers (the golden's apply)
    ran = [p["name"] for p in first["phases"] if p["status"] == "ok"]
    assert ran == [*PIPELINE], json.dumps(first)[-4000:]
    return {"first": serve_counts(first), "started": started_at(sim)}


def test_every_replica_answers_the_openai_client_with_the_key_only(sim: Sim, served: dict[str, Any]) -> None:
    assert all(c["changed"] > 0 for c in served["first"].values()), served["first"]
    urls = endpoints(sim)
    assert sorted(urls) == ["a2-03-a", "a2-03-b", "mn"]
    key = api_key(sim)
    for name, url in urls.items():
        client = openai.OpenAI(base_url=url, api_key=key, max_retries=0, timeout=30)
        assert [m.id for m in client.models.list().data] == [MODEL], name
        done = client.completions.create(model=MODEL, prompt="The capital of France is", max_tokens=8)
        assert done.choices[0].text, (name, done)
        chat = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "Say hello"}], max_tokens=8
        )
        assert chat.choices[0].message.content, (name, chat)
        anonymous = openai.OpenAI(base_url=url, api_key="not-the-key", max_retries=0, timeout=30)
        with pytest.raises(openai.AuthenticationError) as exc:
            anonymous.completions.create(model=MODEL, prompt="hi", max_tokens=2)
        assert exc.value.status_code == 401, name


def test_each_container_gets_only_its_npus_and_the_key_by_file(sim: Sim, served: dict[str, Any]) -> None:
    for server, names in CONTAINERS.items():
        instances = {
            i["container_name"]: i
            for i in host_vars(sim.root / "inventories" / sim.name, server)["vllm_serve_instances"]
        }
        for name in names:
            rc, text = sh(sim, server, f"docker inspect {name}")
            assert rc == 0, text
            (info,) = json.loads(text)
            devices = sorted(d["PathOnHost"] for d in info["HostConfig"]["Devices"])
            want = sorted(
                [f"/dev/davinci{n}" for n in instances[name]["devices"]]
                + ["/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"]
            )
            assert devices == want, (server, name)
            assert info["HostConfig"]["Privileged"] is False and info["HostConfig"]["NetworkMode"] == "host"
            env = dict(e.split("=", 1) for e in info["Config"]["Env"])
            assert env["ASCEND_RT_VISIBLE_DEVICES"] == ",".join(
                map(str, range(len(instances[name]["devices"])))
            )
            assert env["VLLM_API_KEY_FILE"] == "/run/secrets/vllm-api-key" and "VLLM_API_KEY" not in env
            mounts = {m["Destination"]: m for m in info["Mounts"]}
            assert mounts["/run/secrets/vllm-api-key"]["RW"] is False
            assert mounts["/data/models/sim-deepseek-tiny"]["RW"] is False
            if name == "vllm-mn":  # multi-node: the socket interfaces default to the one carrying the address
                assert (
                    env["HCCL_SOCKET_IFNAME"] == env["GLOO_SOCKET_IFNAME"] == env["TP_SOCKET_IFNAME"] == "lo"
                )
        rc, mode = sh(sim, server, "stat -c %a /etc/ascend-orchestrator/secrets/vllm-api-key")
        assert mode.strip() == "600", (server, mode)
        rc, text = sh(sim, server, f"cat /var/lib/ascend-orchestrator/releases/{names[0]}.json")
        record = json.loads(text)["current"]
        assert record["image_id"].startswith("sha256:") and len(record["argv_sha256"]) == 64, record
    assert oct((sim.state_dir / "api-key").stat().st_mode & 0o777) == "0o600"


def test_noop_reapply_restarts_nothing(sim: Sim, served: dict[str, Any]) -> None:
    again = serve_counts(apply_json(sim, "--phases", "serve"))
    assert {h: c["changed"] for h, c in again.items()} == dict.fromkeys(SERVERS, 0), again
    assert started_at(sim) == served["started"]
    check = ansible_playbook(
        sim.root, f"inventories/{sim.name}/hosts.yml", "serve.yml", "--check", "--diff",
        timeout=600,
    )  # fmt: skip
    OUTPUTS.append(check.stdout + check.stderr)
    assert check.returncode == 0, check.stdout[-3000:]
    assert {h: c["changed"] for h, c in recap(check.stdout).items()} == dict.fromkeys(SERVERS, 0)


def test_changing_one_replica_restarts_it_only(sim: Sim, served: dict[str, Any]) -> None:
    site = sim.root / "inventories" / sim.name / "site.yaml"
    text = site.read_text()
    assert text.count("port: 8001}") == 1
    site.write_text(text.replace("port: 8001}", "port: 8002}"))
    before = started_at(sim)
    counts = serve_counts(apply_json(sim, "--phases", "serve"))
    after = started_at(sim)
    moved = {k for k in after if after[k] != before[k]}
    assert moved == {"a2-03/vllm-a2-03-b"}, (before, after)
    assert counts["a2-01"]["changed"] == counts["a2-02"]["changed"] == 0, counts
    url = endpoints(sim)["a2-03-b"]
    assert url.endswith(":8002/v1")
    client = openai.OpenAI(base_url=url, api_key=api_key(sim), max_retries=0, timeout=30)
    assert client.completions.create(model=MODEL, prompt="again", max_tokens=4).choices[0].text
    _rc, text = sh(sim, "a2-03", "cat /var/lib/ascend-orchestrator/releases/vllm-a2-03-b.json")
    record = json.loads(text)
    assert record["previous"]["argv_sha256"] != record["current"]["argv_sha256"], record


def _serve_a2_03(sim: Sim, tmp_path: Path, instances: list[dict[str, Any]]) -> str:
    extra = tmp_path / "instances.json"
    extra.write_text(json.dumps({"vllm_serve_instances": instances}))
    proc = ansible_playbook(
        sim.root, f"inventories/{sim.name}/hosts.yml", "serve.yml", "--limit", "a2-03", "-e", f"@{extra}",
        timeout=600,
    )  # fmt: skip
    OUTPUTS.append(proc.stdout + proc.stderr)
    assert proc.returncode != 0 and recap(proc.stdout)["a2-03"]["failed"] == 1, proc.stdout[-3000:]
    return proc.stdout


def test_wrong_mask_or_missing_device_fails_naming_server_and_device(
    sim: Sim, served: dict[str, Any], tmp_path: Path
) -> None:
    good = host_vars(sim.root / "inventories" / sim.name, "a2-03")["vllm_serve_instances"]
    a, b = good
    # a mask naming NPUs by their host index (physical 4-7) instead of the container's 0..3
    physical = {**b, "env": {**b["env"], "ASCEND_RT_VISIBLE_DEVICES": "4,5,6,7"}}
    out = _serve_a2_03(sim, tmp_path, [a, physical])
    assert "a2-03: container vllm-a2-03-b" in out and "ASCEND_RT_VISIBLE_DEVICES=4,5,6,7" in out, out[-3000:]
    assert "/dev/davinci4" in out
    # a consistent mask the engine refuses (3 NPUs for tp 4): the fake vLLM's own refusal is surfaced
    three = {**a, "devices": [0, 1, 2], "env": {**a["env"], "ASCEND_RT_VISIBLE_DEVICES": "0,1,2"}}
    out = _serve_a2_03(sim, tmp_path, [three, b])
    assert "a2-03" in out and "vllm-a2-03-a" in out, out[-3000:]
    assert "ASCEND_RT_VISIBLE_DEVICES=0,1,2 makes 3 NPU(s) visible" in out, out[-3000:]
    # a missing device node
    sh(sim, "a2-03", "mv /dev/davinci6 /root/davinci6.away")
    try:
        out = _serve_a2_03(sim, tmp_path, good)
    finally:
        sh(sim, "a2-03", "mv /root/davinci6.away /dev/davinci6")
    assert "a2-03: /dev/davinci6 missing" in out, out[-3000:]


def test_an_unresolved_key_never_serves(sim: Sim, served: dict[str, Any]) -> None:
    """Fail closed (the key's variable unset or empty, its file missing or empty): apply and drift refuse
    before any host (exit 2, nothing recorded); plain ansible-playbook stops at the role's check before
    anything changes; the image's entrypoint refuses to start on an empty key file."""
    site = sim.root / "inventories" / sim.name / "site.yaml"
    text = site.read_text()
    key_file = sim.state_dir / "api-key"
    ref = f"file:{key_file.resolve()}"
    assert text.count(ref) == 1
    runs = sorted((sim.root / ".orchestrator" / "runs").iterdir())
    before = container_states(sim)  # whatever they are (the test before may have left a2-03's stopped)
    env = {k: v for k, v in ENV.items() if k != "SIM_SERVE_KEY"}
    empty = sim.root / "empty-key"
    empty.write_text("\n")
    cases = [("env:SIM_SERVE_KEY", {}, "SIM_SERVE_KEY is not set"),
             ("env:SIM_SERVE_KEY", {"SIM_SERVE_KEY": ""}, "SIM_SERVE_KEY is set but empty"),
             (f"file:{sim.root / 'no-such-key'}", {}, "cannot be read"),
             (f"file:{empty}", {}, f"{empty} is empty")]  # fmt: skip
    try:
        for new_ref, extra, why in cases:
            site.write_text(text.replace(ref, new_ref))
            for cmd in (["apply", sim.name, "--yes", "--phases", "serve"], ["drift", sim.name]):
                proc = run([str(BIN / "orchestrator"), *cmd], sim.root, check=False, env={**env, **extra})
                OUTPUTS.append(proc.stdout + proc.stderr)
                said = " ".join(proc.stderr.split())
                assert proc.returncode == 2, (cmd, new_ref, said)
                assert f"serving.api_key: {new_ref} does not resolve" in said and why in said, said
                assert "no host was touched" in said
        # plain ansible-playbook: the role's own check stops every server before a file or container changes
        site.write_text(text.replace(ref, f"file:{empty}"))
        run([str(BIN / "orchestrator"), "render", sim.name], sim.root)
        proc = ansible_playbook(sim.root, f"inventories/{sim.name}/hosts.yml", "serve.yml", timeout=600)
        OUTPUTS.append(proc.stdout + proc.stderr)
        assert proc.returncode != 0, proc.stdout[-3000:]
        assert {h: c["failed"] for h, c in recap(proc.stdout).items()} == dict.fromkeys(SERVERS, 1)
        assert f"serving.api_key: file:{empty} does not resolve: {empty} is empty" in proc.stdout
    finally:
        site.write_text(text)
        run([str(BIN / "orchestrator"), "render", sim.name], sim.root)
    assert sorted((sim.root / ".orchestrator" / "runs").iterdir()) == runs  # nothing ran, nothing recorded
    assert container_states(sim) == before
    rc, out = sh(sim, "a2-01", "cat /etc/ascend-orchestrator/secrets/vllm-api-key")
    assert rc == 0 and out.strip() == api_key(sim)
    # the serving image itself: an empty key file, and the container exits 78 instead of serving
    rc, image = sh(sim, "a2-01", "docker inspect -f '{{.Config.Image}}' vllm-mn")
    assert rc == 0, image
    rc, out = sh(
        sim, "a2-01",
        ": > /tmp/empty-key; docker run --rm --network none -e VLLM_API_KEY_FILE=/run/secrets/k "
        f"-v /tmp/empty-key:/run/secrets/k:ro {image.strip()} echo served; echo rc=$?",
    )  # fmt: skip
    assert "refusing to serve without an API key" in out and out.strip().endswith("rc=78"), out


def test_api_key_appears_nowhere(sim: Sim, served: dict[str, Any]) -> None:
    key = api_key(sim)
    assert len(key) >= 32
    places = [sim.root / "inventories" / sim.name, sim.root / ".orchestrator" / "runs"]
    for base in places:
        files = [p for p in base.rglob("*") if p.is_file()]
        assert files, base
        for path in files:
            assert key not in path.read_text(errors="replace"), path
    assert OUTPUTS and all(key not in out for out in OUTPUTS)
    for server, names in CONTAINERS.items():
        for name in names:
            for what in (f"docker inspect {name}", f"docker logs {name} 2>&1"):
                _rc, text = sh(sim, server, what)
                assert text and key not in text, (server, what)
    assert os.environ.get("VLLM_API_KEY") != key
