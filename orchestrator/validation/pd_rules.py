"""Prefill/decode disaggregation (serving.disaggregation): which of replicas and pools serves the site, the
KV connector, the gateway in front; then every other PD rule module, in the order they report.

Sources: vllm-project/vllm-ascend vllm_ascend/distributed/kv_transfer/__init__.py @v0.23.0 (the connectors
vllm-ascend registers), docs/source/user_guide/release_notes.md (v0.10.1rc1, v0.11.0rc1, v0.12.0rc1),
docs/source/tutorials/features/pd_disaggregation_mooncake_multi_node.md @v0.23.0 (the two-stage proxy).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType

from orchestrator.catalog.version import Version
from orchestrator.spec.findings import Finding, error
from orchestrator.spec.site import SiteSpec
from orchestrator.validation import (
    pd_capacity,
    pd_config_rules,
    pd_eplb_rules,
    pd_layout_rules,
    pd_port_rules,
    pd_serve_rules,
)
from orchestrator.validation.software import release_of

P2P_CONNECTORS: Mapping[str, Version] = MappingProxyType(
    {
        "MooncakeConnectorV1": Version("v0.10.1rc1"),  # #1568: decode pulls KV (pull_blocks)
        "MooncakeLayerwiseConnector": Version("v0.11.0rc1"),  # #2602: prefill pushes layer by layer
    }
)
"""The P2P connectors the PD plan renders, with the first vllm-ascend release that registers each
(release_notes.md; vllm_ascend/distributed/kv_transfer/__init__.py @v0.23.0)."""

OTHER_CONNECTORS: Mapping[str, str] = MappingProxyType(
    {
        "MooncakeConnector": "is upstream vLLM's bootstrap-server connector (router contract transfer_id + "
        "remote_bootstrap_addr), not vllm-ascend's: vllm-ascend registers its Mooncake P2P connector as "
        "MooncakeConnectorV1 (vllm_ascend/distributed/kv_transfer/__init__.py @v0.23.0)",
        "LLMDataDistCMgrConnector": 'was removed in vllm-ascend v0.12.0rc1 (release notes: "LLMdatadist kv '
        'connector is removed. Please use mooncake connector instead.") and needed a global rank table the '
        "plan does not generate",
        "MooncakeHybridConnector": "is vllm-ascend's connector for hybrid KV-cache models (DeepSeek-V4, "
        "#10342), which the PD plan does not render",
        "MooncakeConnectorStoreV1": "is a KV pool (store) connector, not a prefill-to-decode transfer",
        "AscendStoreConnector": "is a KV pool (store) connector, not a prefill-to-decode transfer",
        "UCMConnector": "is a KV pool connector, not a prefill-to-decode transfer",
        "LMCacheAscendConnector": "is a KV cache offload connector, not a prefill-to-decode transfer",
        "SimpleCPUOffloadConnector": "is a KV cache offload connector, not a prefill-to-decode transfer",
        "RecomputeCPUOffloadConnector": "is a KV cache offload connector, not a prefill-to-decode transfer",
        "MultiConnector": "combines other connectors; the PD plan renders one P2P connector",
    }
)


def check(spec: SiteSpec) -> Iterator[Finding]:
    yield from _replicas_or_pools(spec)
    if spec.serving.disaggregation is None:
        return
    yield from _connector(spec)
    yield from _gateway(spec)
    yield from pd_layout_rules.check(spec)
    yield from pd_port_rules.check(spec)
    yield from pd_serve_rules.check(spec)
    yield from pd_config_rules.check(spec)
    yield from pd_eplb_rules.check(spec)
    yield from pd_capacity.check(spec)


def _replicas_or_pools(spec: SiteSpec) -> Iterator[Finding]:
    s = spec.serving
    if not s.replicas and s.disaggregation is None:
        yield error(
            ("serving", "replicas"),
            "serving needs at least one replica (or serving.disaggregation with prefill and decode pools)",
            "add a replica, e.g. replicas: [{name: r1, servers: [<an NPU server>]}]",
            "pd-serving",
        )
    elif s.replicas and s.disaggregation is not None:
        yield error(
            ("serving", "disaggregation"),
            f"serving has both replicas ({len(s.replicas)}) and disaggregation: a PD site serves only "
            "through its prefill and decode pools, and the gateway's two-stage proxy has no place for a "
            "replica that serves whole requests",
            "remove serving.replicas (move their servers into the pools' instances), or remove "
            "serving.disaggregation",
            "pd-serving",
        )


def _connector(spec: SiteSpec) -> Iterator[Finding]:
    d = spec.serving.disaggregation
    assert d is not None
    path = ("serving", "disaggregation", "connector")
    known = ", ".join(P2P_CONNECTORS)
    if d.connector in OTHER_CONNECTORS:
        yield error(
            path,
            f"connector {d.connector} {OTHER_CONNECTORS[d.connector]}",
            "use MooncakeConnectorV1 (decode pulls KV; the default) or MooncakeLayerwiseConnector",
            "pd-connector",
        )
        return
    since = P2P_CONNECTORS.get(d.connector)
    if since is None:
        yield error(
            path,
            f"connector '{d.connector}' is not a KV connector vllm-ascend registers for prefill/decode "
            "transfer (vllm_ascend/distributed/kv_transfer/__init__.py @v0.23.0)",
            f"use one of: {known}",
            "pd-connector",
        )
        return
    release = release_of(spec)
    if release is not None and Version(release.version) < since:
        yield error(
            path,
            f"connector {d.connector} first shipped in vllm-ascend {since}; the pinned release is "
            f"{release.version}",
            f"use MooncakeConnectorV1, or pin software.vllm_ascend.version {since} or later",
            "pd-connector",
        )


def _gateway(spec: SiteSpec) -> Iterator[Finding]:
    if spec.gateway.enabled:
        return
    yield error(
        ("gateway", "enabled"),
        "a PD site needs the gateway: a client request goes first to a prefill instance (max_tokens 1, "
        "kv_transfer_params do_remote_decode) and then, with the KV location it returns, to a decode "
        "instance; only the gateway's two-stage proxy does that (examples/disaggregated_prefill_v1/"
        "load_balance_proxy_server_example.py @v0.23.0)",
        "set gateway: {enabled: true} and give a server the 'gateway' role (or set gateway.host)",
        "pd-gateway",
    )
