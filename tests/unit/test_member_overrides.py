"""Per-server overrides reach the rendered serving environment; the hugepages limit has an exact edge.

One replica over two A2 servers (DP 2 x TP 8), so every member gets the multi-node HCCL environment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.render import render_texts
from tests.spec_text import check, printed

TWO_NODE = """\
site: lab
profiles:
  a2:
    chip: 910B3
    memory_gb: 512
servers:
  - name: a2-01
    address: 10.0.0.11
    profile: a2
    roles: [npu, build, monitoring]{first}
  - name: a2-02
    address: 10.0.0.12
    profile: a2
network:
  hccn:
    subnets:
      - cidr: 192.168.100.0/24
tuning:
  hugepages: {{size_kb: 1048576, count: {pages}}}
serving:
  parallelism: {{tp: 8, dp: 2}}
  max_num_seqs: 32{hccl}
  replicas:
    - {{name: r1, servers: [a2-01, a2-02]}}
"""


def _spec(first: str = "", hccl: str = "", pages: int = 0) -> str:
    return TWO_NODE.format(first=first, hccl=hccl, pages=pages)


def _env(text: str) -> dict[str, dict[str, str]]:
    result = check(text)
    assert result.ok, printed(result)
    texts = render_texts(result)
    out: dict[str, dict[str, str]] = {}
    for rel, body in texts.items():
        if rel.startswith("host_vars/"):
            data: dict[str, Any] = yaml.safe_load(body)
            for inst in data["vllm_serve_instances"]:
                out[Path(rel).stem] = inst["env"]
    return out


def test_hccl_if_ip_override_is_rendered_for_that_server_only() -> None:
    env = _env(_spec(first="\n    overrides: {hccl_if_ip: 10.9.0.11}"))
    assert env["a2-01"]["HCCL_IF_IP"] == "10.9.0.11"
    assert env["a2-02"]["HCCL_IF_IP"] == "10.0.0.12"


def test_without_override_hccl_if_ip_is_the_management_address() -> None:
    env = _env(_spec())
    assert (env["a2-01"]["HCCL_IF_IP"], env["a2-02"]["HCCL_IF_IP"]) == ("10.0.0.11", "10.0.0.12")


TUTORIAL = (
    Path(__file__).resolve().parents[1]
    / "data/upstream/vllm-ascend/v0.23.0/docs/source/tutorials/models/DeepSeek-R1.md"
)


def _argv(text: str) -> dict[str, list[str]]:
    result = check(text)
    assert result.ok, printed(result)
    out: dict[str, list[str]] = {}
    for rel, body in render_texts(result).items():
        if rel.startswith("host_vars/"):
            for inst in yaml.safe_load(body)["vllm_serve_instances"]:
                out[Path(rel).stem] = [str(a) for a in inst["args"]]
    return out


def test_dp_address_is_the_heads_hccl_if_ip() -> None:
    # The tutorial's two nodes: node 0 passes --data-parallel-address $local_ip and exports
    # HCCL_IF_IP=$local_ip; node 1 passes $node0_ip, "same as the local_IP address in node 0".
    nodes = TUTORIAL.read_text(encoding="utf-8").split("### 5.2", 1)[1].split("::::{tab-item} Node 1", 1)
    assert "export HCCL_IF_IP=$local_ip" in nodes[0] and "--data-parallel-address $local_ip" in nodes[0]
    assert 'node0_ip="xxxx" # same as the local_IP address in node 0' in nodes[1]
    assert "--data-parallel-address $node0_ip" in nodes[1]
    text = _spec(first="\n    overrides: {hccl_if_ip: 10.9.0.11}")
    env, argv = _env(text), _argv(text)
    for server in ("a2-01", "a2-02"):
        args = argv[server]
        # was 10.0.0.11, the head's management address, while HCCL_IF_IP was 10.9.0.11
        assert args[args.index("--data-parallel-address") + 1] == env["a2-01"]["HCCL_IF_IP"] == "10.9.0.11"


SOCKETS = ("HCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME")


def test_server_socket_ifname_beats_the_site_wide_one() -> None:
    env = _env(
        _spec(
            first="\n    overrides: {socket_ifname: enp189s0f0}",
            hccl="\n  hccl: {socket_ifname: bond0}",
        )
    )
    assert [env["a2-01"][k] for k in SOCKETS] == ["enp189s0f0"] * 3
    assert [env["a2-02"][k] for k in SOCKETS] == ["bond0"] * 3


def test_server_socket_ifname_without_a_site_wide_one() -> None:
    env = _env(_spec(first="\n    overrides: {socket_ifname: enp189s0f0}"))
    assert [env["a2-01"][k] for k in SOCKETS] == ["enp189s0f0"] * 3
    assert not [k for k in SOCKETS if k in env["a2-02"]]


@pytest.mark.parametrize(("pages", "refused"), [(256, False), (257, True)])
def test_hugepages_may_take_at_most_half_of_the_host_memory(pages: int, refused: bool) -> None:
    # 1 GiB pages on 512 GB hosts: 256 pages are exactly half, 257 are more
    result = check(_spec(pages=pages))
    found = [f for f in result.errors if f.path == ("tuning", "hugepages", "count")]
    if not refused:
        assert result.ok, printed(result)
        return
    assert [f.message for f in found] == [
        "257 pages of 1048576 kB reserve 257 GB, over half of the 512 GB of server 'a2-01' (servers[0])"
    ]
    assert found[0].fix == "reserve fewer hugepages"
