"""What render writes for a PD site (render/vars/serve_pd.py, groups) and what `orchestrator validate` prints
for it (cli/pd_view.py): shapes and values for the A3 example, written out by hand here; an aggregated site's
inventory carries none of it."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from orchestrator.cli.app import main
from orchestrator.pipeline import validate_file
from orchestrator.render import render_texts
from tests.helpers import EXAMPLES, ROOT

SITE = EXAMPLES / "a3-pd-r1-w8a8" / "site.yaml"
RANK_KEYS = [
    "replica", "group", "role", "mode", "node_rank", "container_name", "image", "port", "head_address",
    "devices", "visible_devices", "dp_size_local", "dp_start_rank", "args", "env", "startup_timeout_s",
    "pool", "engine_id", "dp_rank", "url", "kv_port", "kv_handshake_port",
]  # fmt: skip


def files(spec: Any = SITE) -> dict[str, Any]:
    result = validate_file(spec)
    assert result.ok, [str(f) for f in result.errors]
    return {k: yaml.safe_load(v) for k, v in render_texts(result).items() if k.endswith(".yml")}


def test_host_vars_carry_each_servers_ranks() -> None:
    out = files()
    d2 = out["host_vars/a3-d2.yml"]["vllm_serve_instances"]
    assert [r["dp_rank"] for r in d2] == list(range(16, 32))
    first = d2[0]
    assert list(first) == RANK_KEYS
    assert {k: first[k] for k in RANK_KEYS if k not in ("args", "env", "image", "startup_timeout_s")} == {
        "replica": "d1",
        "group": "decode",
        "role": "head",  # every DP rank runs its own API server: the serve role gates each
        "mode": "pd",
        "node_rank": 1,
        "pool": "decode",
        "engine_id": "d1",
        "dp_rank": 16,
        "dp_size_local": 1,
        "dp_start_rank": 16,
        "container_name": "vllm-d1-dp16",
        "head_address": "10.30.1.14",
        "port": 7100,
        "url": "http://10.30.1.14:7100",
        "devices": [0],
        "visible_devices": "0",
        "kv_port": 36200,
        "kv_handshake_port": 36216,
    }
    assert first["args"][0] == "serve" and first["env"]["ASCEND_RT_VISIBLE_DEVICES"] == "0"
    assert first["image"] == "vllm-ascend-site:v0.23.0-ascend910_9391"
    p1 = out["host_vars/a3-p1.yml"]["vllm_serve_instances"]
    assert [(r["container_name"], r["visible_devices"]) for r in p1] == [
        ("vllm-p1-dp0", "0,1,2,3,4,5,6,7"),
        ("vllm-p1-dp1", "8,9,10,11,12,13,14,15"),
    ]
    assert out["host_vars/gw-01.yml"]["vllm_serve_instances"] == []


def test_rollout_replicas_are_the_pd_instances() -> None:
    reps = files()["group_vars/all.yml"]["rollout_replicas"]
    assert [(r["name"], r["pool"], r["head"], r["members"], r["mode"]) for r in reps] == [
        ("p1", "prefill", "a3-p1", ["a3-p1"], "pd"),
        ("p2", "prefill", "a3-p2", ["a3-p2"], "pd"),
        ("d1", "decode", "a3-d1", ["a3-d1", "a3-d2"], "pd"),
    ]
    d1 = reps[2]
    assert d1["worker_url"] == "http://10.30.1.13:7100" and len(d1["urls"]) == 32
    assert d1["urls"][-1] == "http://10.30.1.14:7115" and d1["engine_id"] == "d1"


def test_group_vars_summarise_the_pools() -> None:
    pd = files()["group_vars/all.yml"]["vllm_serve_pd"]
    assert list(pd) == ["connector", "prefill_worker_urls", "decode_worker_urls", "instances"]
    assert pd["connector"] == "MooncakeConnectorV1"
    assert pd["prefill_worker_urls"] == [
        "http://10.30.1.11:7100",
        "http://10.30.1.11:7101",
        "http://10.30.1.12:7100",
        "http://10.30.1.12:7101",
    ]
    assert len(pd["decode_worker_urls"]) == 32
    names = [(i["name"], i["role"], i["engine_id"], i["kv_port"], i["servers"]) for i in pd["instances"]]
    assert names == [
        ("p1", "prefill", "p1", 36000, ["a3-p1"]),
        ("p2", "prefill", "p2", 36100, ["a3-p2"]),
        ("d1", "decode", "d1", 36200, ["a3-d1", "a3-d2"]),
    ]
    d1 = pd["instances"][2]
    assert (d1["dp_address"], d1["dp_rpc_port"]) == ("10.30.1.13", 12321)
    assert d1["ranks"][31] == {
        "server": "a3-d2",
        "dp_rank": 31,
        "container_name": "vllm-d1-dp31",
        "port": 7115,
        "url": "http://10.30.1.14:7115",
        "engine_id": "d1_dp0",  # vLLM's _dp<local rank> suffix (vllm/v1/engine/core.py @v0.23.0)
    }


def test_inventory_groups_and_no_secret() -> None:
    result = validate_file(SITE)
    texts = render_texts(result)
    groups = yaml.safe_load(texts["hosts.yml"])["all"]["children"]
    assert list(groups["pd_instance_d1"]["hosts"]) == ["a3-d1", "a3-d2"]
    assert list(groups["pd_prefill"]["children"]) == ["pd_instance_p1", "pd_instance_p2"]
    assert list(groups["pd_decode"]["children"]) == ["pd_instance_d1"]
    assert list(groups["phase_serve"]["hosts"]) == ["a3-p1", "a3-p2", "a3-d1", "a3-d2"]
    everything = "\n".join(texts.values())
    assert "VLLM_API_KEY:" not in everything and "--api-key" not in everything  # a reference only
    assert yaml.safe_load(texts["group_vars/all.yml"])["vllm_serve_api_key_ref"] == "env:VLLM_API_KEY"


def test_an_aggregated_site_renders_no_pd_variable() -> None:
    out = files(EXAMPLES / "a2-pair-r1-w8a8" / "site.yaml")
    assert "vllm_serve_pd" not in out["group_vars/all.yml"]
    hosts = [v for k, v in out.items() if k.startswith("host_vars/")]
    assert all(i["mode"] != "pd" for v in hosts for i in v["vllm_serve_instances"])
    assert not any(g.startswith("pd_") for g in out["hosts.yml"]["all"]["children"])


def _validate(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *argv: str) -> str:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit) as stop:
        main(["validate", *argv, "inventories/a3-pd-r1-w8a8/site.yaml"])
    assert stop.value.code == 0
    return capsys.readouterr().out


def test_the_plan_prints_both_pools(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _validate(capsys, monkeypatch)
    lines = out.splitlines()
    assert (
        "Prefill/decode disaggregated (MooncakeConnectorV1): 2 prefill instance(s), 1 decode instance(s)"
        in lines
    )
    assert any(
        x.startswith("  Prefill instance p2 (tp 8 x pp 1 x dp 2") and "kv_port 36100" in x for x in lines
    )
    assert any(
        x.startswith("  Decode instance d1 (tp 1 x pp 1 x dp 32") and "engine id 'd1'" in x for x in lines
    )
    assert "    1        a3-p2         7101      36108-36115      8-15   vllm-p2-dp1" in lines
    assert "    16       a3-d2         7100      36216            0      vllm-d1-dp16" in lines
    assert sum(x.strip().startswith("memory per NPU:") for x in lines) == 3
    prefill = next(x for x in lines if x.startswith("  gateway prefill workers (4): "))
    assert prefill.endswith(
        "http://10.30.1.11:7100 http://10.30.1.11:7101 http://10.30.1.12:7100 http://10.30.1.12:7101"
    )
    assert any(x.startswith("  gateway decode workers (32): http://10.30.1.13:7100 ") for x in lines)
    assert "vllm serve" not in out  # the argv only with --argv


def test_argv_prints_every_ranks_command(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _validate(capsys, monkeypatch, "--argv")
    heads = [x for x in out.splitlines() if x.startswith(("Prefill ", "Decode ")) and x.endswith("):")]
    assert len(heads) == 36 and heads[0] == "Prefill p1 dp0 on a3-p1 (vllm-p1-dp0):"
    assert heads[-1] == "Decode d1 dp31 on a3-d2 (vllm-d1-dp31):"
    assert out.count("\n  vllm serve /data/models/DeepSeek-R1-W8A8 ") == 36
    assert "  env VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT=480" in out


def test_monitoring_scrapes_every_rank_labelled_with_its_role() -> None:
    from orchestrator.render.vars.monitoring import scrape_jobs

    result = validate_file(SITE)  # its monitoring is off (openEuler): the jobs as they would be rendered
    assert result.spec is not None and result.plan is not None
    (vllm,) = [j for j in scrape_jobs(result.spec, result.plan) if j["name"] == "vllm"]
    labels = [(t["address"], t["labels"]["replica"], t["labels"]["pd_role"]) for t in vllm["targets"]]
    assert len(labels) == 4 + 32  # every DP rank is its own API server with its own /metrics
    assert labels[0] == ("10.30.1.11:7100", "p1", "prefill")
    assert labels[-1] == ("10.30.1.14:7115", "d1", "decode")
    assert vllm["targets"][-1]["labels"] == {
        "host": "a3-d2",
        "replica": "d1",
        "pd_role": "decode",
        "dp_rank": "31",
    }
