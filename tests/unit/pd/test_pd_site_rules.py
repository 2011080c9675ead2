"""PD rules about the site's shape: replicas or pools, the KV connector, the gateway, prefill/decode TP,
one hardware generation, instance names, and where the instances run. Each test breaks one line of the valid
2P1D site (pd_site.BASE), expects one finding there (and no other error), and checks the unbroken site has
none."""

from __future__ import annotations

import pytest

from tests.unit.pd.pd_site import BASE, SHARED, clean, edit, expect, validate

DISAGG = "serving.disaggregation"


def test_the_base_site_is_valid_and_planned() -> None:
    result = validate(BASE)
    # the tutorial's one decode instance cannot roll without an outage: the one finding, a warning
    assert [(f.code, f.is_error) for f in result.findings] == [("pd-rollout", False)], result.findings
    assert result.plan is not None


def _without_pools(text: str) -> str:
    head, _, _ = text.partition("  disaggregation:\n")
    return head


def test_neither_replicas_nor_pools() -> None:
    text = _without_pools(BASE)
    f = expect(text, "pd-serving", "serving.replicas", "max_model_len: 16384")  # serving's first line
    assert "at least one replica" in f.message and f.fix and "replicas:" in f.fix
    clean(BASE, "pd-serving")


def test_replicas_and_pools_together() -> None:
    text = edit(
        BASE,
        (
            "  max_num_seqs: 8\n  disaggregation:",
            "  max_num_seqs: 8\n  replicas: [{name: r1, servers: [a3-01]}]\n  disaggregation:",
        ),
    )
    f = expect(text, "pd-serving", DISAGG, "connector: MooncakeConnectorV1", only=False)
    assert "only through its prefill and decode pools" in f.message
    clean(BASE, "pd-serving")


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("MooncakeConnector", "MooncakeConnectorV1"),
        ("LLMDataDistCMgrConnector", "v0.12.0rc1"),
        ("MooncakeConnectorStoreV1", "KV pool"),
    ],
)
def test_connector_refused(name: str, words: str) -> None:
    text = edit(BASE, ("connector: MooncakeConnectorV1", f"connector: {name}"))
    f = expect(text, "pd-connector", f"{DISAGG}.connector", f"connector: {name}")
    assert words in f.message
    assert f.fix and "MooncakeConnectorV1" in f.fix
    clean(BASE, "pd-connector")


def test_unknown_connector_lists_the_known_ones() -> None:
    text = edit(BASE, ("connector: MooncakeConnectorV1", "connector: NixlConnector"))
    f = expect(text, "pd-connector", f"{DISAGG}.connector", "connector: NixlConnector")
    assert f.fix == "use one of: MooncakeConnectorV1, MooncakeLayerwiseConnector"


def test_layerwise_connector_is_accepted_on_the_pinned_release() -> None:
    clean(
        edit(BASE, ("connector: MooncakeConnectorV1", "connector: MooncakeLayerwiseConnector")),
        "pd-connector",
    )


def test_connector_newer_than_the_pinned_release() -> None:
    text = edit(BASE, ("    version: v0.23.0\n", "    version: v0.9.1\n"))
    f = expect(text, "pd-connector", f"{DISAGG}.connector", "connector: MooncakeConnectorV1", only=False)
    assert "first shipped in vllm-ascend v0.10.1rc1; the pinned release is v0.9.1" in f.message


def test_gateway_is_required() -> None:
    text = edit(BASE, ("gateway:\n  enabled: true", "gateway:\n  enabled: false"))
    f = expect(text, "pd-gateway", "gateway.enabled", "  enabled: false")
    assert "two-stage proxy" in f.message and f.fix and "enabled: true" in f.fix
    clean(BASE, "pd-gateway")


def test_prefill_tp_below_decode_tp() -> None:
    text = edit(BASE, ("{tp: 1, dp: 32, ep: true}", "{tp: 16, dp: 2, ep: true}"))
    f = expect(text, "pd-parallelism", f"{DISAGG}.prefill.parallelism.tp", "{tp: 8, dp: 2, ep: true}")
    assert "must be greater than or equal to the decode_tp_size: 16" in f.message
    assert f.related and f.related[0].position is not None
    clean(BASE, "pd-parallelism")


def test_prefill_tp_not_a_multiple_of_decode_tp() -> None:
    text = edit(BASE, ("{tp: 1, dp: 32, ep: true}", "{tp: 3, dp: 10, ep: true}"))
    f = expect(
        text, "pd-parallelism", f"{DISAGG}.prefill.parallelism.tp", "{tp: 8, dp: 2, ep: true}", only=False
    )
    # DeepSeek's 128 heads: any decode tp that does not divide 8 does not divide them either
    (heads,) = [g for g in validate(text).errors if g.code != f.code]
    assert heads.code == "topology" and "128 attention heads, which decode tp=3" in heads.message
    assert "P_tp % D_tp == 0" in f.message and f.fix and "e.g. 2" in f.fix
    clean(edit(BASE, ("{tp: 1, dp: 32, ep: true}", "{tp: 2, dp: 16, ep: true}")), "pd-parallelism")


def test_decode_pp_must_be_1() -> None:
    text = edit(BASE, ("{tp: 1, dp: 32, ep: true}", "{tp: 1, pp: 2, dp: 16, ep: true}"))
    f = expect(text, "pd-parallelism", f"{DISAGG}.decode.parallelism.pp", "{tp: 1, pp: 2, dp: 16, ep: true}")
    assert "decode pp size must be 1" in f.message


def test_prefill_on_a2_and_decode_on_a3() -> None:
    # p1 on an A2 server (8 x 910B3, one die per card: DP1 x TP8 fits its 8 devices)
    text = edit(
        BASE,
        (
            '    chip: "910_93"\n    cards: 8\n',
            '    chip: "910_93"\n    cards: 8\n  atlas-800t-a2:\n    chip: 910B3\n    cards: 8\n',
        ),
        (
            "{name: a3-02, address: 10.30.0.12, profile: atlas-800t-a3}",
            "{name: a3-02, address: 10.30.0.12, profile: atlas-800t-a2}",
        ),
    )
    result = validate(text)
    hits = [f for f in result.findings if f.code == "pd-hardware"]
    assert len(hits) == 1
    f = hits[0]
    assert f.path == ("serving", "disaggregation", "prefill", "instances", 1, "servers", 0)
    assert (
        f.position is not None
        and f.position.line == text.splitlines().index("        - {name: p1, servers: [a3-02]}") + 1
    )
    assert "Atlas A2" in f.message and "Atlas A3" in f.message and "Heterogeneous" not in f.message
    clean(BASE, "pd-hardware")


def test_instance_names_are_unique_across_pools() -> None:
    text = edit(BASE, ("{name: d0, servers:", "{name: p1, servers:"))
    f = expect(text, "unique", f"{DISAGG}.decode.instances[0].name", "{name: p1, servers: [a3-03")
    assert "serving.disaggregation.prefill.instances[1].name" in f.message
    assert f.related and f.related[0].position is not None
    clean(BASE, "unique")


def test_dp_must_spread_evenly_over_the_servers() -> None:
    text = edit(BASE, ("{tp: 1, dp: 32, ep: true}", "{tp: 1, dp: 31, ep: true}"))
    f = expect(text, "pd-layout", f"{DISAGG}.decode.instances[0].servers", "{name: d0, servers:")
    assert "dp 31 ranks over 2 servers" in f.message
    clean(BASE, "pd-layout")


def test_ranks_per_server_must_fit_its_devices() -> None:
    text = edit(BASE, ("{tp: 1, dp: 32, ep: true}", "{tp: 1, dp: 64, ep: true}"))
    f = expect(text, "pd-layout", f"{DISAGG}.decode.parallelism", "{tp: 1, dp: 64, ep: true}")
    assert "32 devices" in f.message and "offers 16" in f.message


def test_instance_devices_limit_the_fit() -> None:
    text = edit(BASE, ("{name: p0, servers: [a3-01]}", "{name: p0, servers: [a3-01], devices: [0, 1, 2, 3]}"))
    f = expect(
        text, "pd-layout", f"{DISAGG}.prefill.instances[0].devices", "{name: p0, servers: [a3-01], devices"
    )
    assert "offers 4" in f.message


def test_unknown_server_in_an_instance() -> None:
    text = edit(BASE, ("servers: [a3-03, a3-04]", "servers: [a3-03, a3-09]"))
    f = expect(text, "reference", f"{DISAGG}.decode.instances[0].servers[1]", "servers: [a3-03, a3-09]")
    assert "a3-09" in f.message
    clean(BASE, "reference")


def test_instance_server_without_the_npu_role() -> None:
    text = edit(BASE, ("servers: [a3-03, a3-04]", "servers: [a3-03, gw-01]"))
    f = expect(
        text, "reference", f"{DISAGG}.decode.instances[0].servers[1]", "servers: [a3-03, gw-01]", only=False
    )
    assert "no 'npu' role" in f.message


def test_servers_of_the_pools_are_not_idle() -> None:
    assert not [f for f in validate(BASE).findings if f.code == "idle"]


def test_ep_on_a_dense_model() -> None:
    text = edit(SHARED, ("{tp: 4, dp: 1}\n      port: 7200", "{tp: 4, dp: 1, ep: true}\n      port: 7200"))
    f = expect(text, "topology", f"{DISAGG}.decode.parallelism.ep", "{tp: 4, dp: 1, ep: true}")
    assert "is dense" in f.message
    clean(SHARED, "topology")


def test_a_pool_of_one_instance_cannot_roll_without_an_outage() -> None:
    lines = [n for n, line in enumerate(BASE.splitlines(), 1) if line == "      instances:"]
    first_decode_instance = lines[1] + 1  # the prefill pool's come first; the finding is at the list
    f = expect(
        BASE, "pd-rollout", "serving.disaggregation.decode.instances", first_decode_instance, only=False
    )
    assert not f.is_error and "the decode pool has one instance" in f.message
    assert f.fix and "add a second decode instance" in f.fix
    # the prefill pool has two: one serves while the other rolls
    assert [g for g in validate(BASE).findings if g.code == "pd-rollout"] == [f]
