"""The serve phase's rolling update as rendered: serial from canary / batch_size / min_available, the worker
URLs, an inventory of real servers only; the collection's batch split agrees with Ansible's own serial split;
which head servers roll which replicas; the apply's rollout summary and gate lines."""

from __future__ import annotations

from typing import Any

import pytest
from ansible.executor.playbook_executor import PlaybookExecutor
from ansible.playbook.play import Play
from ansible_collections.ascend.npu.plugins.filter import vllm_rollout as f

from orchestrator.planning.rollout import parse_batch_size, serial
from orchestrator.render.inventory import inventory_files
from orchestrator.runner.rollout import gate_lines, summary, timing
from orchestrator.spec.operations import Rollout
from tests.helpers import EXAMPLES, load_example, run_cli, validate_data


@pytest.mark.parametrize(
    ("rollout", "replicas", "want"),
    [
        ({}, 3, [1, 1]),  # defaults: canary 1, then 1 at a time
        ({"canary": 1, "batch_size": 2}, 5, [1, 2]),
        ({"canary": 0, "batch_size": 2}, 5, [2]),
        ({"canary": 1, "batch_size": "50%"}, 8, [1, 4]),
        ({"canary": 1, "batch_size": "10%"}, 3, [1, 1]),  # a percentage gives at least one replica
        ({"canary": 2, "batch_size": 4, "min_available": 3}, 5, [2, 2]),  # 5 - 3 may be out at once
        ({"canary": 3, "batch_size": "100%", "min_available": 4}, 5, [1, 1]),
    ],
)
def test_serial_from_canary_batch_and_min_available(
    rollout: dict[str, Any], replicas: int, want: list[int]
) -> None:
    r = Rollout.model_validate(rollout)
    assert serial(r, replicas) == want
    # no batch takes more replicas out of service than min_available allows
    assert max(want) <= replicas - (r.min_available or 0)


def test_percentage_batch_size_floors_like_ansible() -> None:
    def size(value: int | str, replicas: int) -> int | None:
        parsed = parse_batch_size(value)
        return parsed.of(replicas) if parsed else None

    assert size("25%", 10) == 2
    assert size(3, 10) == 3
    assert size("10%", 3) == 1  # at least one replica
    assert size("3", 10) is None and size(0, 10) is None and size("150%", 10) is None  # validation refuses


def test_the_plan_holds_the_parsed_batch_and_play_vars_copy_it() -> None:
    data = load_example("a2-fleet-gateway")
    data["rollout"] = {**data.get("rollout", {}), "canary": 1, "batch_size": "50%", "min_available": 0}
    res = validate_data(data)
    assert res.plan is not None
    n = len(res.plan.replicas)
    assert res.plan.rollout.batch_size == max(1, n // 2)
    assert res.plan.rollout.serial == (1, max(1, n // 2))


def _ansible_batches(hosts: list[str], serial_value: Any) -> list[list[str]]:
    """Ansible's own split (PlaybookExecutor._get_serialized_batches) of a play over ``hosts``."""

    class _Inv:
        def get_hosts(self, pattern: Any, order: Any = None) -> list[str]:
            return list(hosts)

    play = Play.load({"hosts": "all", "serial": serial_value, "gather_facts": False, "tasks": []})
    executor = PlaybookExecutor.__new__(PlaybookExecutor)
    executor._inventory = _Inv()  # type: ignore[assignment]
    return [list(b) for b in executor._get_serialized_batches(play)]


@pytest.mark.parametrize("serial_value", [[1, 1], [1, 2], [2], [1, 3], [3], [1, 3, 1]])
def test_the_collection_splits_batches_as_ansible_does(serial_value: list[Any]) -> None:
    hosts = [f"srv-{i}" for i in range(7)]
    assert f.batches(hosts, serial_value) == _ansible_batches(hosts, serial_value)
    first = f.batches(hosts, serial_value)[0]
    assert f.batch(first[0], hosts, serial_value)[0] == 1


@pytest.mark.parametrize("serial_value", [["50%"], [1, "30%"], [0], []])
def test_the_collection_takes_planned_batch_sizes_only(serial_value: list[Any]) -> None:
    """rollout.batch_size is parsed once, in planning: the filter refuses what the plan never renders."""
    with pytest.raises(ValueError):
        f.batches(["a", "b"], serial_value)


def test_inventory_holds_servers_only_and_every_replica_its_worker_url() -> None:
    data = load_example("a2-fleet-gateway")
    res = validate_data(data)
    assert res.spec is not None and res.plan is not None
    files = inventory_files(res.spec, res.plan, "0" * 64)
    groups = files["hosts.yml"]["all"]["children"]
    named = {h for body in groups.values() for h in ((body or {}).get("hosts") or {})}
    assert named <= {s.name for s in res.spec.servers}  # --limit SERVERS selects every host a phase runs on
    summaries = files["group_vars/all.yml"]["rollout_replicas"]
    assert [s["name"] for s in summaries] == [r.name for r in res.plan.replicas]
    for s, rep in zip(summaries, res.plan.replicas, strict=True):
        assert s["head"] == rep.head.server and s["members"] == [m.server for m in rep.members]
        # vllm-router's worker URL: the endpoint without its /v1 suffix
        assert s["worker_url"] + "/v1" == rep.endpoint


REPLICAS = [
    {"name": "mn", "head": "a2-01", "members": ["a2-01", "a2-02"]},
    {"name": "b", "head": "a2-03", "members": ["a2-03"]},
    {"name": "c", "head": "a2-04", "members": ["a2-04"]},
    {"name": "a", "head": "a2-03", "members": ["a2-03"]},
]


def _wants(*names: str) -> dict[str, Any]:
    return {"_vllm_serve_update": list(names), "_vllm_serve_entries": [{"replica": n} for n in names]}


def test_heads_roll_their_replicas_in_plan_order_and_a_split_replica_is_named() -> None:
    hv = {"a2-01": _wants("mn"), "a2-02": _wants("mn"), "a2-03": _wants("b", "a"), "a2-04": {}}
    # the rolling play's hosts: the heads of the replicas that roll, once each, in plan order
    assert f.heads(REPLICAS, hv) == ["a2-01", "a2-03"]
    assert [r["name"] for r in f.headed(REPLICAS, "a2-03", hv)] == ["b", "a"]
    assert f.headed(REPLICAS, "a2-04", hv) == []
    # a limit without mn's head: a2-02 names the server left out; the head without a2-02 names a2-02
    assert f.orphans(REPLICAS, "a2-02", hv, ["a2-02", "a2-03"]) == {"mn": ["a2-01"]}
    assert f.orphans(REPLICAS, "a2-01", hv, ["a2-01"]) == {"mn": ["a2-02"]}
    assert f.orphans(REPLICAS, "a2-03", hv, ["a2-03"]) == {}
    assert f.orphans(REPLICAS, "a2-04", hv, ["a2-04"]) == {}  # nothing to update there


def test_rollout_summary_orders_batches_and_flags_a_failure() -> None:
    data = {
        "orchestrator_rollout": {
            "mn": {"batch": 1, "batches": 2, "result": "updated", "gates": []},
            "b": {
                "batch": 2,
                "batches": 2,
                "result": "failed, restored",
                "gates": [],
                "failed_gate": "accuracy",
            },
            "a": {"batch": 2, "batches": 2, "result": "updated", "gates": []},
        }
    }
    out = summary(data)
    assert out is not None
    assert out["batches"] == [["mn"], ["b", "a"]] and out["result"] == "failed"
    assert summary({}) is None
    for done in ("updated", "rolled_back", "healed"):  # apply, `orchestrator rollback`, `orchestrator heal`
        rolled = {"mn": {"batch": 1, "batches": 1, "result": done, "gates": []}}
        one = summary({"orchestrator_rollout": rolled})
        assert one is not None and one["result"] == "ok", done
    lines = gate_lines(
        {
            "label": "batch 1/2 replica mn",
            "gates": [
                {
                    "gate": "health",
                    "ok": True,
                    "seconds": 3.14,
                    "expected": "/health 200",
                    "seen": "/health 200",
                },
                {
                    "gate": "accuracy",
                    "ok": False,
                    "seconds": 0.2,
                    "expected": "within 0.50%",
                    "seen": "5.00% off",
                },
            ],
        }
    )
    assert lines == [
        "batch 1/2 replica mn: gate health ok (3.1 s): /health 200",
        "batch 1/2 replica mn: gate accuracy FAILED (0.2 s): expected within 0.50%, seen 5.00% off",
    ]


def test_release_entries_restore_the_recorded_release_and_roll_back_to_the_previous() -> None:
    wanted = [
        {
            "params": {"name": "vllm-a", "image": "sha256:new"},
            "record": {"release": "n"},
            "replica": "a",
            "role": "head",
        },
        {
            "params": {"name": "vllm-b", "image": "sha256:new"},
            "record": {"release": "n"},
            "replica": "b",
            "role": "head",
        },
    ]
    records = {
        "vllm-a": {
            "current": {"release": "c", "params": {"name": "vllm-a", "image": "sha256:cur"}, "time": "t"},
            "previous": {"release": "p", "params": {"name": "vllm-a", "image": "sha256:old"}},
        },
        "vllm-b": {"current": {"release": "c"}, "previous": None},  # an issue-9 record: hashes only
    }
    (a,) = f.rollout_entries(wanted, records, ["a"], False)
    assert a["target"]["params"]["image"] == "sha256:new" and a["restore"]["params"]["image"] == "sha256:cur"
    assert a["restore"]["record"] == {"release": "c"}
    (back,) = f.rollout_entries(wanted, records, ["a"], True)
    assert (
        back["target"]["params"]["image"] == "sha256:old"
        and back["restore"]["params"]["image"] == "sha256:cur"
    )
    assert a["kept"] == records["vllm-a"]["previous"]  # the rollback target a restart must not overwrite
    (b,) = f.rollout_entries(wanted, records, ["b"], False)
    assert b["restore"] is None and b["kept"] is None
    assert f.missing_previous(["a", "b"], records, wanted) == ["b"]


def test_a_replica_rolls_only_when_every_member_computed_its_entries() -> None:
    rep = {"name": "mn", "head": "a2-01", "members": ["a2-01", "a2-02"]}
    entry = [{"replica": "mn", "name": "vllm-mn"}]
    both = {
        "a2-01": {"_vllm_serve_update": ["mn"], "_vllm_serve_entries": entry},
        "a2-02": {"_vllm_serve_update": ["mn"], "_vllm_serve_entries": entry},
    }
    assert f.rolls(rep, both)
    assert not f.rolls(rep, {**both, "a2-02": {}})  # a2-02 failed (e.g. no previous release) or left out
    assert not f.rolls(rep, {**both, "a2-01": {"_vllm_serve_entries": entry}})  # the head lists no update
    assert [m["host"] for m in f.members(rep, both, "_vllm_serve_entries")] == ["a2-01", "a2-02"]


def test_rollback_refuses_an_unknown_replica_before_running_anything() -> None:
    proc = run_cli("rollback", str(EXAMPLES / "a2-pair-r1-w8a8" / "site.yaml"), "--replica", "nope", "--yes")
    assert proc.returncode == 64, proc.stderr
    assert "no replica 'nope'; the replicas are r1" in " ".join(proc.stderr.split()), proc.stderr


def test_rollout_timing_keeps_the_soak_and_the_warm_up_apart() -> None:
    def gate(name: str, seconds: float) -> dict[str, Any]:
        return {"gate": name, "ok": True, "seconds": seconds, "expected": "", "seen": ""}

    reps = {
        "mn": {
            "batch": 1,
            "started": 100.0,
            "finished": 130.0,
            "gates": [gate("health", 4.0), gate("completion", 0.5), gate("soak", 6.0), gate("warmup", 9.0)],
        },
        "a": {
            "batch": 2,
            "started": 131.0,
            "finished": 150.0,
            "gates": [
                gate("health", 3.0),
                gate("completion", 0.25),
                gate("warmup", 8.0),
                gate("gateway", 0.25),
            ],
        },
    }
    got = timing(reps)
    assert (got["wall_s"], got["ready_sum_s"]) == (50.0, 7.0)
    assert got["ready_to_passed_s"] == {"mn": 0.5, "a": 0.5}
    assert got["soak_s"] == {"mn": 6.0, "a": 0.0} and got["warmup_s"] == {"mn": 9.0, "a": 8.0}
