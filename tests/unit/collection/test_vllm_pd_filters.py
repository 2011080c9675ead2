"""Filters of the serve phase on a PD site (ascend.npu vllm_serve_pd.py) over the committed A3 PD example's
rendered group_vars: the round trips that gate each instance (one per DP rank, its partners in the other
pool) and the API servers drift probes (every rank), checked against the instances of the example's spec."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import yaml
from ansible_collections.ascend.npu.plugins.filter import vllm_serve_pd as f

from tests.helpers import ROOT, load_example

INVENTORY = ROOT / "inventories" / "a3-pd-r1-w8a8"


def _group_vars() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((INVENTORY / "group_vars" / "all.yml").read_text(encoding="utf-8"))
    return data


def _spec_instances() -> dict[str, tuple[str, int, list[str]]]:
    """instance -> (pool, DP ranks, server addresses), from the example's spec."""
    spec = load_example("a3-pd-r1-w8a8")
    address = {s["name"]: s["address"] for s in spec["servers"]}
    pools = spec["serving"]["disaggregation"]
    return {
        i["name"]: (pool, pools[pool]["parallelism"]["dp"], [address[s] for s in i["servers"]])
        for pool in ("prefill", "decode")
        for i in pools[pool]["instances"]
    }


def test_one_round_trip_per_rank_with_partners_of_the_other_pool() -> None:
    gv = _group_vars()
    want = _spec_instances()
    trips = f.pairs(gv["rollout_replicas"], gv["vllm_serve_pd"])
    by_instance: dict[str, list[dict[str, Any]]] = {}
    for t in trips:
        by_instance.setdefault(t["label"].split(" instance ")[1].split(" ")[0], []).append(t)
    assert sorted(by_instance) == sorted(want)
    for name, (pool, dp, addresses) in want.items():
        mine = by_instance[name]
        side = "prefill_url" if pool == "prefill" else "decode_url"
        other = "decode_url" if pool == "prefill" else "prefill_url"
        assert len({t[side] for t in mine}) == dp and all(t["check"] == pool for t in mine), name
        assert {urlsplit(t[side]).hostname for t in mine} == set(addresses), name
        for t in mine:
            partners = [p["url"] for p in t["partners"]]
            assert partners[0] == t[other] and len(set(partners)) == len(partners) == min(4, _pool_size(pool))
            assert not {urlsplit(u).hostname for u in partners} & set(addresses), t  # the other pool only
            if pool == "decode":  # a prefill partner names the engine the round trip expects of it
                assert t["partners"][0]["engine_id"] == t["prefill_engine_id"], t
    # the partners of one instance's ranks spread over the other pool
    assert len({t["decode_url"] for t in by_instance["p1"]}) == want["p1"][1]


def _pool_size(pool: str) -> int:
    """Ranks of the other pool, from the spec."""
    other = "decode" if pool == "prefill" else "prefill"
    return sum(dp for p, dp, _ in _spec_instances().values() if p == other)


def test_drift_probes_every_rank_of_a_pd_instance_and_the_head_of_a_replica() -> None:
    gv = _group_vars()
    want = _spec_instances()
    ranks = f.replica_ranks(gv["rollout_replicas"])
    for name, (_, dp, addresses) in want.items():
        urls = [r["url"] for r in ranks if r["name"] == name]
        assert len(set(urls)) == dp and {urlsplit(u).hostname for u in urls} == set(addresses), name
    aggregated = {"name": "r1", "worker_url": "http://10.0.0.1:8000", "head": "a"}
    assert f.replica_ranks([aggregated]) == [{"name": "r1", "url": "http://10.0.0.1:8000"}]
