"""Ray replicas (tp or pp across servers): what each member runs, checked against the vllm-ascend Ray recipe.

Expected command lines are written out by hand from vllm-ascend docs/source/tutorials/features/ray.md
(snapshot 182b75e): per node `export HCCL_IF_IP={local_ip} GLOO_SOCKET_IFNAME={nic} TP_SOCKET_IFNAME={nic}
RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES=1 ASCEND_RT_VISIBLE_DEVICES=0,...,7`, `ray start --head` on
the head, `ray start --address='{head_node_ip}:6379' --node-ip-address={local_ip}` on a worker, then one
`vllm serve ... --distributed-executor-backend ray --pipeline-parallel-size 2 --tensor-parallel-size 8` (or
`--tensor-parallel-size 16`) on the head only. Our additions to the recipe's `ray start` (the head's own
--node-ip-address, --resources with the node's NPU count, --disable-usage-stats, --block on workers) are
spelled out literally too (see orchestrator/planning/serve_args.py ray_start_args for the why).
"""

from __future__ import annotations

import shlex
from typing import Any

from orchestrator.planning.model import ReplicaPlan
from orchestrator.render.inventory import inventory_files
from tests.helpers import validate_data

HEAD_START = (
    "ray start --head --port 6379 --node-ip-address 10.20.1.11 --resources '{\"NPU\": 8}' "
    "--disable-usage-stats"
)
WORKER_START = (
    "ray start --address 10.20.1.11:6379 --node-ip-address 10.20.1.12 --resources '{\"NPU\": 8}' "
    "--disable-usage-stats --block"
)


def _replica(data: dict[str, Any]) -> ReplicaPlan:
    result = validate_data(data)
    assert result.ok, [f.message for f in result.errors]
    assert result.plan is not None
    (rep,) = result.plan.replicas
    return rep


def _parallel_flags(args: tuple[str, ...]) -> dict[str, str]:
    """The distribution flags of a `vllm serve` argv, as `--flag: value` ('' for a bare flag)."""
    watched = (
        "--tensor-parallel-size",
        "--pipeline-parallel-size",
        "--data-parallel-size",
        "--data-parallel-size-local",
        "--data-parallel-address",
        "--headless",
        "--distributed-executor-backend",
        "--nnodes",
        "--node-rank",
    )
    out = {}
    for i, arg in enumerate(args):
        if arg in watched:
            value = args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("--") else ""
            out[arg] = value
    return out


def _recipe_env(local_ip: str) -> dict[str, str]:
    return {
        "HCCL_IF_IP": local_ip,
        "GLOO_SOCKET_IFNAME": "enp189s0f0",
        "TP_SOCKET_IFNAME": "enp189s0f0",
        "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES": "1",
        "ASCEND_RT_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7",
    }


def test_tp16_over_two_a2_servers_follows_the_ray_recipe(pair: dict[str, Any]) -> None:
    pair["serving"]["parallelism"] = {"tp": 16, "dp": 1, "ep": True}
    pair["serving"]["replicas"][0]["multi_node_tp"] = True
    rep = _replica(pair)
    head, worker = rep.members
    assert (rep.mode, head.role, worker.role) == ("ray", "head", "ray-worker")
    assert _parallel_flags(head.args) == {
        "--tensor-parallel-size": "16",
        "--distributed-executor-backend": "ray",
    }
    assert head.args[:2] == ("serve", "/data/models/DeepSeek-R1-W8A8")
    assert worker.args == ()  # workers run no `vllm serve`
    assert shlex.join(("ray", *head.ray_start_args)) == HEAD_START
    assert shlex.join(("ray", *worker.ray_start_args)) == WORKER_START
    for member, ip in ((head, "10.20.1.11"), (worker, "10.20.1.12")):
        env = dict(member.env)
        assert _recipe_env(ip).items() <= env.items()
        assert env["VLLM_HOST_IP"] == ip
    assert rep.ray_address == "10.20.1.11:6379"


def test_pp2_tp8_over_two_a2_servers_is_the_recipes_first_command(pair: dict[str, Any]) -> None:
    pair["serving"]["parallelism"] = {"tp": 8, "pp": 2, "dp": 1, "ep": True}
    rep = _replica(pair)
    head, worker = rep.members
    assert _parallel_flags(head.args) == {
        "--tensor-parallel-size": "8",
        "--pipeline-parallel-size": "2",
        "--distributed-executor-backend": "ray",
    }
    assert "--host" in head.args and worker.args == ()
    assert shlex.join(("ray", *worker.ray_start_args)) == WORKER_START


def test_a_device_subset_offers_only_those_npus_to_ray(pair: dict[str, Any]) -> None:
    pair["serving"]["parallelism"] = {"tp": 4, "pp": 2, "dp": 1, "ep": True}
    pair["serving"]["max_model_len"] = 2048
    pair["model"]["name"] = "DeepSeek-R1-Distill-Qwen-32B"
    pair["model"]["weights_path"] = "/data/models/distill"
    pair["serving"]["parallelism"]["ep"] = False
    pair["serving"]["replicas"][0]["devices"] = [4, 5, 6, 7]
    rep = _replica(pair)
    for member in rep.members:
        assert member.devices == (4, 5, 6, 7)  # the container gets /dev/davinci4-7: logical 0-3 inside
        assert dict(member.env)["ASCEND_RT_VISIBLE_DEVICES"] == "0,1,2,3"
        assert "--resources" in member.ray_start_args
        assert member.ray_start_args[member.ray_start_args.index("--resources") + 1] == '{"NPU": 4}'


def test_hccl_if_ip_override_is_the_ray_node_ip_too(pair: dict[str, Any]) -> None:
    """The recipe uses one {local_ip} for HCCL_IF_IP and --node-ip-address; VLLM_HOST_IP must match it."""
    pair["serving"]["parallelism"] = {"tp": 8, "pp": 2, "dp": 1, "ep": True}
    pair["servers"][0]["overrides"] = {"hccl_if_ip": "10.30.1.11"}
    pair["servers"][1]["overrides"] = {"hccl_if_ip": "10.30.1.12"}
    rep = _replica(pair)
    head, worker = rep.members
    assert rep.ray_address == "10.30.1.11:6379"
    assert shlex.join(("ray", *worker.ray_start_args)).startswith(
        "ray start --address 10.30.1.11:6379 --node-ip-address 10.30.1.12 "
    )
    assert dict(worker.env)["VLLM_HOST_IP"] == dict(worker.env)["HCCL_IF_IP"] == "10.30.1.12"
    assert "--node-ip-address 10.30.1.11" in shlex.join(head.ray_start_args)
    assert head.args[head.args.index("--host") + 1] == "10.20.1.11"  # the API stays on the address


def test_rendered_host_vars_carry_the_ray_role(pair: dict[str, Any]) -> None:
    pair["serving"]["parallelism"] = {"tp": 16, "dp": 1, "ep": True}
    pair["serving"]["replicas"][0]["multi_node_tp"] = True
    result = validate_data(pair)
    assert result.plan is not None and result.spec is not None
    files = inventory_files(result.spec, result.plan, "0" * 64)
    (head,) = files["host_vars/a2-01.yml"]["vllm_serve_instances"]
    (worker,) = files["host_vars/a2-02.yml"]["vllm_serve_instances"]
    assert head["ray"] == {
        "gcs_address": "10.20.1.11:6379",
        "node_ip_address": "10.20.1.11",
        "npus": 8,
        "cluster_npus": 16,
        "start_args": shlex.split(HEAD_START)[1:],
    }
    assert worker["ray"]["start_args"] == shlex.split(WORKER_START)[1:]
    assert (worker["role"], worker["args"], worker["port"]) == ("ray-worker", [], None)
    assert head["port"] == 8000 and head["args"][0] == "serve"


def test_non_ray_instances_have_no_ray_section(pair: dict[str, Any]) -> None:
    result = validate_data(pair)
    assert result.plan is not None and result.spec is not None
    files = inventory_files(result.spec, result.plan, "0" * 64)
    for host in ("a2-01", "a2-02"):
        (inst,) = files[f"host_vars/{host}.yml"]["vllm_serve_instances"]
        assert inst["mode"] == "dp" and "ray" not in inst
    assert all(not m.ray_start_args and m.ray_node_ip is None for m in result.plan.replicas[0].members)


def test_spec_env_may_not_set_vllm_host_ip(pair: dict[str, Any]) -> None:
    """One VLLM_HOST_IP for every member would break the placement group (bundle 0 pinned to that IP)."""
    pair["serving"]["env"] = {"VLLM_HOST_IP": "10.20.1.11"}
    paths = [f.path for f in validate_data(pair).errors]
    assert paths == [("serving", "env", "VLLM_HOST_IP")]
