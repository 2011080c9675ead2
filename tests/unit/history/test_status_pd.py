"""`orchestrator status` of a prefill/decode disaggregated site: a PD instance is healthy when every DP rank
(its own API server) is, and in the gateway when the PD router slot that the front router lists has every
rank among its /workers (vllm-router's answer shapes: GET /list_workers -> {"urls": [...]}, a PD slot's GET
/workers -> {"workers": [{"url": ...}]}, as roles/gateway reads them); the replicas of the committed A3 PD
example as its spec places them."""

from __future__ import annotations

import json
from collections.abc import Callable
from urllib.parse import urlsplit

from fake_vllm.metrics import Metrics
from orchestrator.cli import exits
from orchestrator.cli.status_cmd import exit_code
from orchestrator.status.fleet import Replica, Site, fleet_state, read_site
from orchestrator.status.probes import gateway_workers
from orchestrator.status.releases import Releases
from tests.helpers import ROOT, load_example

Routes = dict[str, tuple[int, str]]
Serve = Callable[[Routes], str]


def _rank(serve: Serve, health: int, running: int) -> str:
    metrics = Metrics("m", [0], 1000, {})
    for i in range(running):
        metrics.started(0, f"p{i}", 5)
    return serve({"/health": (health, ""), "/metrics": (200, metrics.render())})


def _workers(*urls: str) -> tuple[int, str]:
    return 200, json.dumps({"workers": [{"url": u, "worker_type": "decode"} for u in urls]})


def test_a_pd_instance_is_healthy_and_routed_only_with_every_rank(serve: Serve) -> None:
    d0, d1 = _rank(serve, 200, 1), _rank(serve, 200, 2)
    p0 = _rank(serve, 200, 0)
    slot_a = serve({"/workers": _workers(p0, d0, d1)})
    slot_b = serve({"/workers": _workers()})  # the idle slot: never read, the front does not list it
    front = serve({"/list_workers": (200, json.dumps({"urls": [slot_a + "/"]}))})
    dec = Replica("d1", "h2", ("h2", "h3"), d0, {"h2": "vllm-d1-dp0", "h3": "vllm-d1-dp1"}, (d0, d1))
    pre = Replica("p1", "h1", ("h1",), p0, {"h1": "vllm-p1-dp0"}, (p0,))
    site = Site("lab", (pre, dec), front, ("h1", "h2", "h3"), frozenset({slot_a, slot_b}))
    fleet = fleet_state(site, Releases())
    p, d = fleet.replicas
    assert (d.healthy, d.requests_running, d.in_gateway, d.urls) == (True, 3.0, True, [d0, d1])
    assert (p.healthy, p.in_gateway, p.urls) == (True, True, [p0])
    assert exit_code(fleet) == exits.OK

    # the second rank stops answering 200, and the slot no longer lists it: both name that rank
    sick = _rank(serve, 503, 0)
    slot_c = serve({"/workers": _workers(p0, d0)})
    front = serve({"/list_workers": (200, json.dumps({"urls": [slot_c]}))})
    dec = Replica("d1", "h2", ("h2", "h3"), d0, dec.containers, (d0, sick))
    fleet = fleet_state(Site("lab", (pre, dec), front, site.servers, frozenset({slot_c})), Releases())
    p, d = fleet.replicas
    assert (d.healthy, d.health, d.in_gateway) == (False, f"{sick}: HTTP 503", False)
    assert (p.healthy, p.in_gateway) == (True, True)
    assert exit_code(fleet) == exits.HOSTS_FAILED


def test_a_slot_that_does_not_answer_is_a_gateway_error(serve: Serve) -> None:
    gone = "http://127.0.0.1:9"
    front = serve({"/list_workers": (200, json.dumps({"urls": [gone]}))})
    listed, why = gateway_workers(front, frozenset({gone}))
    assert listed is None and why.startswith(f"GET {gone}/workers: "), why
    bad = serve({"/workers": (200, json.dumps({"urls": []}))})
    front = serve({"/list_workers": (200, json.dumps({"urls": [bad]}))})
    assert gateway_workers(front, frozenset({bad})) == (
        None,
        f"GET {bad}/workers: no 'workers' list in the answer",
    )
    # a listed worker that is not a PD slot (an aggregated replica) is only itself
    assert gateway_workers(front, frozenset()) == ({bad}, "")


def test_the_pd_instances_of_the_committed_a3_example() -> None:
    spec = load_example("a3-pd-r1-w8a8")
    site = read_site(ROOT / "inventories" / "a3-pd-r1-w8a8")
    address = {s["name"]: s["address"] for s in spec["servers"]}
    pools = spec["serving"]["disaggregation"]
    want = {
        i["name"]: (pool["parallelism"]["dp"], i["servers"])
        for pool in (pools["prefill"], pools["decode"])
        for i in pool["instances"]
    }
    assert [r.name for r in site.replicas] == list(want)
    for rep in site.replicas:
        dp, servers = want[rep.name]
        hosts = [urlsplit(u).hostname for u in rep.ranks]
        # every DP rank its own API server, spread evenly over the instance's servers; the first rank heads
        assert len(set(rep.ranks)) == dp and sorted(set(hosts)) == sorted(address[s] for s in servers)
        assert all(hosts.count(address[s]) == dp // len(servers) for s in servers), rep
        assert (rep.head, rep.url, rep.members) == (servers[0], rep.ranks[0], tuple(servers))
        assert rep.containers[servers[0]].endswith("-dp0"), rep.containers
    gateway = next(s for s in spec["servers"] if "gateway" in s.get("roles", []))
    assert site.gateway_url == f"http://{gateway['address']}:{spec['gateway']['port']}"
    slots = [urlsplit(u) for u in sorted(site.pd_slots)]
    assert len(slots) == 2 and {u.hostname for u in slots} == {gateway["address"]}, site.pd_slots
