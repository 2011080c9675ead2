"""Replica layout rules, whole findings (path, message, fix, code) written from the rule they state:
pipeline stages against the layer count, DP ranks that would straddle servers, the layouts suggested when
tp x pp x dp does not match the devices."""

from __future__ import annotations

from tests.spec_text import check, described

TWO_A2 = """
site: lab
profiles:
  a2: {chip: 910B3}
servers:
  - {name: a2-01, address: 10.0.0.11, profile: a2, roles: [npu, build, monitoring]}
  - {name: a2-02, address: 10.0.0.12, profile: a2}
network:
  hccn:
    subnets: [{cidr: 192.168.100.0/24}]
"""

ONE_A2 = """
site: lab
profiles:
  a2: {chip: 910B3}
servers:
  - {name: a2-01, address: 10.0.0.11, profile: a2, roles: [npu, build, monitoring]}
"""


def tiny(layers: int) -> str:
    """A dense model of `layers` layers (8 heads), small enough for any layout on one A2."""
    return f"""\
model:
  name: tiny-{layers}l
  architecture:
    family: llama
    params_b: 1.0
    layers: {layers}
    hidden_size: 1024
    heads: 8
    kv_heads: 8
    max_position_embeddings: 4096
  weights_path: /data/models/tiny
"""


PP4 = """
serving:
  parallelism: {tp: 1, pp: 4}
  max_model_len: 4096
  max_num_seqs: 4
  replicas:
    - {name: r1, servers: [a2-01], devices: [0, 1, 2, 3]}
"""


def test_more_pipeline_stages_than_layers_is_refused() -> None:
    result = check(ONE_A2, PP4, model=tiny(3))
    assert [described(f) for f in result.findings] == [
        ("serving.parallelism.pp", "pp=4 exceeds the 3 layers of tiny-3l", "lower pp", "topology", [])
    ]


def test_one_layer_per_pipeline_stage_is_allowed() -> None:
    result = check(ONE_A2, PP4, model=tiny(4))
    assert result.ok, [described(f) for f in result.findings]
    assert result.plan is not None and result.plan.replicas[0].pp == 4


def test_a_dp_rank_may_not_straddle_two_servers() -> None:
    # 2 servers x 6 devices = 12 = tp 4 x dp 3, but the second DP rank would own devices 4, 5 of a2-01 and
    # 0, 1 of a2-02: without Ray a rank's TP group lives on one server
    result = check(
        TWO_A2,
        """
        serving:
          parallelism: {tp: 4, dp: 3}
          max_num_seqs: 4
          replicas:
            - {name: r1, servers: [a2-01, a2-02], devices: [0, 1, 2, 3, 4, 5]}
        """,
    )
    assert [described(f) for f in result.findings] == [
        (
            "serving.parallelism.tp",
            "each member has 6 devices, not a multiple of tp=4: a DP rank cannot straddle servers",
            "use a tp that divides 6",
            "topology",
            [],
        )
    ]


def test_dp_ranks_that_fill_each_server_are_planned_per_server() -> None:
    # 2 servers x 8 devices, tp 4 x dp 4: two DP ranks per server; a2-02 starts at rank 2
    result = check(
        TWO_A2,
        """
        serving:
          parallelism: {tp: 4, dp: 4}
          max_num_seqs: 4
          replicas:
            - {name: r1, servers: [a2-01, a2-02]}
        """,
    )
    assert result.plan is not None, [described(f) for f in result.findings]
    (replica,) = result.plan.replicas
    assert replica.mode == "dp"
    assert [(m.server, m.role, m.dp_size_local, m.dp_start_rank) for m in replica.members] == [
        ("a2-01", "head", 2, 0),
        ("a2-02", "headless", 2, 2),
    ]


def test_world_size_mismatch_suggests_dp_and_tp_layouts_with_pipeline_stages() -> None:
    # 16 devices, tp 4 x pp 2: dp 2 fills them (4 x 2 x 2 = 16), or tp 16 / 2 = 8 with dp 1; with pp > 1
    # the two servers run on Ray, which takes dp 1 only
    result = check(
        TWO_A2,
        """
        serving:
          parallelism: {tp: 4, pp: 2, dp: 4}
          max_num_seqs: 4
          replicas:
            - {name: r1, servers: [a2-01, a2-02]}
        """,
    )
    assert [described(f) for f in result.findings] == [
        (
            "serving.parallelism",
            "tp x pp x dp = 4 x 2 x 4 = 32, but replica 'r1' owns 16 NPU devices (2 server(s) x 8)",
            # more servers would not do: pp > 1 across servers runs on Ray, with dp 1 only
            "set dp: 2 (tp 4 x pp 2 x dp 2 = 16), or set tp: 8 with dp: 1",
            "topology",
            [],
        ),
        (
            "serving.parallelism.dp",
            "a multi-server replica with pipeline or cross-server tensor parallelism runs on Ray, which this "
            "pipeline deploys with dp=1 only",
            "use dp: 1, or drop pp/multi-node tp and scale with dp",
            "topology",
            [],
        ),
    ]


def test_world_size_mismatch_without_a_dividing_layout_names_the_devices() -> None:
    # 8 devices, tp 3: 8 is no multiple of 3, and pp 1 offers no tp alternative; 3 of the 8 devices fit
    result = check(
        ONE_A2,
        """
        serving:
          parallelism: {tp: 3}
          max_model_len: 4096
          max_num_seqs: 4
          replicas:
            - {name: r1, servers: [a2-01]}
        """,
        model=tiny(4).replace("heads: 8\n    kv_heads: 8", "heads: 24\n    kv_heads: 24"),
    )
    assert [described(f) for f in result.findings] == [
        (
            "serving.parallelism",
            "tp x pp x dp = 3 x 1 x 1 = 3, but replica 'r1' owns 8 NPU devices (1 server(s) x 8)",
            "set devices: [0, 1, 2] on the replica (the 3 devices it uses on each of its servers; the others "
            "can serve another replica)",
            "topology",
            [],
        )
    ]


def test_tp_beyond_the_server_is_reported_once_for_the_replicas_that_share_it() -> None:
    """tp 16 on 8-NPU servers: 'devices' cannot help (it only takes devices away); one finding, not one per
    replica, since serving.parallelism is one line of the spec."""
    result = check(
        TWO_A2,
        """
        serving:
          parallelism: {tp: 16}
          max_model_len: 4096
          max_num_seqs: 4
          replicas:
            - {name: r1, servers: [a2-01]}
            - {name: r2, servers: [a2-02]}
        """,
        model=tiny(4).replace("heads: 8\n    kv_heads: 8", "heads: 16\n    kv_heads: 16"),
    )
    assert [described(f) for f in result.findings] == [
        (
            "serving.parallelism",
            "tp x pp x dp = 16 x 1 x 1 = 16, but replicas 'r1', 'r2' each own 8 NPU devices "
            "(1 server(s) x 8)",
            "set tp: 8, or give each replica 2 servers of 8 devices and multi_node_tp: true (tensor "
            "parallelism across servers runs on Ray)",
            "topology",
            [],
        )
    ]
