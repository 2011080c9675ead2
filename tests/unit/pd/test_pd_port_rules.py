"""PD ports: Mooncake kv ports out of AscendDirectTransport's random range, and no port of an instance
(API ports, DP RPC port, kv port range) shared with another listener of the same server."""

from __future__ import annotations

from orchestrator.pipeline import validate_text
from orchestrator.validation.pd_port_rules import Claim, in_random_range, pd_claims
from tests.unit.pd.pd_site import BASE, SHARED, clean, edit, expect

DISAGG = "serving.disaggregation"


def test_kv_port_in_the_random_range_of_a_16_npu_server() -> None:
    text = edit(BASE, ("{name: p1, servers: [a3-02]}", "{name: p1, servers: [a3-02], kv_port: 30100}"))
    f = expect(text, "pd-kv-port", f"{DISAGG}.prefill.instances[1].kv_port", "kv_port: 30100")
    assert (
        "30100-30115" in f.message and "[20000, 36000)" in f.message and "Address already in use" in f.message
    )
    assert f.fix and "36000 or more" in f.fix
    clean(BASE, "pd-kv-port")


def test_an_8_npu_server_needs_28000() -> None:
    kv = [Claim(27990, 27998, "prefill instance 'p0' Mooncake kv ports", ("x",), True, True)]
    (f,) = in_random_range([("a2-01", 8, kv[0])])
    assert "[20000, 28000)" in f.message
    assert not list(in_random_range([("a2-01", 8, Claim(28000, 28008, "k", ("x",), True, True))]))
    assert not list(in_random_range([("a2-01", 8, Claim(19990, 19998, "k", ("x",), True, True))]))


def test_the_kv_ranges_follow_the_global_dp_rank() -> None:
    # rank r binds kv_port + r x tp x pp + device index (mooncake_connector.py @v0.23.0): DP32 x TP1 over two
    # servers binds 36200-36215 on the first and 36216-36231 on the second
    spec = validate_text(BASE).spec
    assert spec is not None
    kv = {s: [(c.lo, c.hi) for c in cs if c.kv] for s, cs in pd_claims(spec).items()}
    assert kv == {
        "a3-01": [(36000, 36016)],
        "a3-02": [(36100, 36116)],
        "a3-03": [(36200, 36216)],
        "a3-04": [(36216, 36232)],
    }
    api = {s: [(c.lo, c.hi) for c in cs if c.what.endswith("API")] for s, cs in pd_claims(spec).items()}
    assert api["a3-01"] == [(7100, 7102)] and api["a3-04"] == [(7200, 7216)]


def test_kv_port_overlaps_an_api_port() -> None:
    text = edit(BASE, ("{name: p1, servers: [a3-02]}", "{name: p1, servers: [a3-02], kv_port: 7090}"))
    f = expect(text, "ports", f"{DISAGG}.prefill.instances[1].kv_port", "kv_port: 7090")
    assert "on 'a3-02'" in f.message and "7090-7105" in f.message and "API (7100-7101)" in f.message
    assert f.fix and "16 ports" in f.fix
    clean(BASE, "ports")


def test_kv_ranges_of_instances_sharing_a_server_overlap() -> None:
    text = edit(SHARED, ("      kv_port: 36100\n", "      kv_port: 36002\n"))
    f = expect(text, "ports", f"{DISAGG}.decode.kv_port", "kv_port: 36002")
    assert "decode instance 'd0' Mooncake kv ports (36002-36005)" in f.message
    assert "prefill instance 'p0' Mooncake kv ports (36000-36003)" in f.message
    clean(SHARED, "ports")


def test_dp_rpc_port_on_the_node_exporter_port() -> None:
    text = edit(BASE, ("dp_rpc_port: 12421", "dp_rpc_port: 9100"))
    f = expect(text, "ports", f"{DISAGG}.decode.dp_rpc_port", "dp_rpc_port: 9100")
    assert "node_exporter" in f.message and "on 'a3-03'" in f.message


def test_api_ports_of_pools_sharing_a_server() -> None:
    text = edit(SHARED, ("      port: 7200\n", "      port: 7100\n"))
    decode_port = text.splitlines().index("    decode:") + 3  # parallelism, then port
    assert text.splitlines()[decode_port - 1] == "      port: 7100"
    f = expect(text, "ports", f"{DISAGG}.decode.port", decode_port)
    assert "decode instance 'd0' API (7100)" in f.message


def test_hccl_base_port_in_a_pool_env_with_two_ranks_per_server() -> None:
    text = edit(
        BASE,
        (
            '      env: {VLLM_RPC_TIMEOUT: "3600000"}\n      extra_args: [--seed',
            '      env: {HCCL_IF_BASE_PORT: "61000"}\n      extra_args: [--seed',
        ),
    )
    f = expect(text, "hccl", f"{DISAGG}.prefill.env.HCCL_IF_BASE_PORT", "HCCL_IF_BASE_PORT")
    assert "only the first can bind its HCCL ports" in f.message
    clean(BASE, "hccl")


# Two instances of one pool on one server (the simulator's pd layout): each needs its own API port, and two
# DP instances whose first server is the same their own DP RPC port.
TWO_PREFILL = edit(
    SHARED,
    (
        "{name: d0, servers: [a3-01], devices: [4, 5, 6, 7]}",
        "{name: d0, servers: [a3-01], devices: [8, 9, 10, 11]}",
    ),
    (
        "        - {name: p0, servers: [a3-01], devices: [0, 1, 2, 3]}",
        "        - {name: p0, servers: [a3-01], devices: [0, 1, 2, 3]}\n"
        "        - {name: p1, servers: [a3-01], devices: [4, 5, 6, 7], port: 7101, kv_port: 36200}",
    ),
)


def test_two_instances_of_a_pool_on_one_server_with_their_own_ports() -> None:
    clean(TWO_PREFILL, "ports")
    result = validate_text(TWO_PREFILL, "site.yaml")
    assert result.ok and result.plan is not None and result.plan.pd is not None
    p0, p1 = result.plan.pd.prefill
    assert [r.port for r in p0.ranks] == [7100] and [r.port for r in p1.ranks] == [7101]
    # one rank each: no DP coordinator, so the pool's one dp_rpc_port is claimed by neither
    assert "--data-parallel-rpc-port" not in p1.ranks[0].args


def test_two_instances_of_a_pool_on_one_server_on_the_pools_port() -> None:
    text = edit(TWO_PREFILL, (", port: 7101,", ","))
    f = expect(text, "ports", f"{DISAGG}.prefill.port", "      port: 7100")
    assert "prefill instance 'p1' API (7100) overlap" in f.message, f.message


def test_the_instance_port_is_the_path_of_its_overlap() -> None:
    text = edit(TWO_PREFILL, (", port: 7101,", ", port: 7100,"))  # set, but p0's (the pool's) port
    f = expect(text, "ports", f"{DISAGG}.prefill.instances[1].port", "port: 7100,")
    assert "prefill instance 'p1' API (7100) overlap prefill instance 'p0' API (7100)" in f.message, f.message
