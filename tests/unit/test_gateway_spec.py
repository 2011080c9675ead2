"""The gateway section (vllm-router): validation of the router's policy names and of what the pinned router
cannot do the way the role runs it (field path, line, fix), and what render hands the gateway role.

Upstream facts compared with (vllm-router 0.1.17 from PyPI, `vllm-router --help` and its router_args.py,
read 2026-12-04): the --policy choices, the flag names, and the wheels' sha256 from PyPI's JSON API."""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

import pytest
import yaml

from orchestrator.pipeline import ValidationResult, validate_text
from orchestrator.render import render_texts
from orchestrator.spec.findings import Position
from orchestrator.spec.gateway import RouterPolicy

ROOT = Path(__file__).resolve().parents[2]
FLEET = (ROOT / "inventories" / "a2-fleet-gateway" / "site.yaml").read_text(encoding="utf-8")
GATEWAY_BLOCK = "gateway:\n  enabled: true\n  port: 8080\n"

# `vllm-router --help` of 0.1.17: --policy {random,round_robin,cache_aware,kv_aware,power_of_two,
# consistent_hash,sticky_least_loaded}
UPSTREAM_POLICIES = (
    "random",
    "round_robin",
    "cache_aware",
    "kv_aware",
    "power_of_two",
    "consistent_hash",
    "sticky_least_loaded",
)
# every option of `vllm-router --help` (0.1.17) that the role may pass
UPSTREAM_FLAGS = {
    "--host", "--port", "--policy", "--prometheus-host", "--prometheus-port", "--request-timeout-secs",
    "--max-concurrent-requests", "--queue-size", "--queue-timeout-secs", "--worker-startup-timeout-secs",
    "--worker-startup-check-interval", "--health-check-interval-secs", "--health-check-timeout-secs",
    "--health-check-endpoint", "--health-failure-threshold", "--health-success-threshold",
    "--retry-max-retries", "--retry-initial-backoff-ms", "--retry-max-backoff-ms",
    "--retry-backoff-multiplier", "--retry-jitter-factor", "--disable-retries", "--cb-failure-threshold",
    "--cb-success-threshold",
    "--cb-timeout-duration-secs", "--cb-window-duration-secs", "--disable-circuit-breaker",
}  # fmt: skip
# PyPI JSON API, releases["0.1.17"][].digests.sha256
PYPI_SHA256 = {
    "x86_64": "85c96bea4d573a49b5a8ae4c72ee3dfe733aba26b6f1ff1256e6142f1f42694d",
    "aarch64": "1ec4d5ce14c19431cc84e36238507dff89020ab024d99f042f091f5e9f2c895a",
}


def _with_gateway(extra: str) -> str:
    assert GATEWAY_BLOCK in FLEET
    return FLEET.replace(GATEWAY_BLOCK, GATEWAY_BLOCK + extra)


def _line(text: str, needle: str) -> int:
    return text.splitlines().index(needle) + 1


def _error(result: ValidationResult, path: tuple[str, ...]) -> Any:
    found = [f for f in result.errors if f.path == path]
    assert len(found) == 1, [str(f) for f in result.findings]
    return found[0]


def _all_vars(text: str) -> dict[str, Any]:
    result = validate_text(text, "site.yaml")
    assert result.ok, [str(f) for f in result.errors]
    data: dict[str, Any] = yaml.safe_load(render_texts(result)["group_vars/all.yml"])
    return data


def test_the_policy_names_are_the_routers() -> None:
    assert get_args(RouterPolicy) == UPSTREAM_POLICIES


def test_the_old_policy_name_says_which_router_policy_to_use() -> None:
    text = _with_gateway("  policy: least_outstanding\n")
    f = _error(validate_text(text, "site.yaml"), ("gateway", "policy"))
    assert f.position == Position(_line(text, "  policy: least_outstanding"), 11)
    assert f.message.startswith("'least_outstanding' is not a vllm-router policy")
    assert "'sticky_least_loaded'" in f.message and "'round_robin'" in f.message
    assert f.fix is not None and f.fix.startswith("write a vllm-router policy: random: ")
    assert all(f"{p}: " in f.fix for p in UPSTREAM_POLICIES)


def test_an_unknown_policy_lists_the_routers() -> None:
    text = _with_gateway("  policy: least_conn\n")
    f = _error(validate_text(text, "site.yaml"), ("gateway", "policy"))
    assert f.position == Position(_line(text, "  policy: least_conn"), 11)
    assert f.message == "'least_conn' is not a vllm-router policy"
    assert f.fix is not None and all(f"{p}: " in f.fix for p in UPSTREAM_POLICIES)


def test_a_session_policy_is_named_for_sticky() -> None:
    """'sticky' used to get a bare list; the router's docs (vllm-project/router docs/load_balancing/README.md)
    name consistent_hash, keyed by X-Session-ID / X-User-ID, for sessions that stay on one replica."""
    text = _with_gateway("  policy: sticky\n")
    f = _error(validate_text(text, "site.yaml"), ("gateway", "policy"))
    assert f.position == Position(_line(text, "  policy: sticky"), 11)
    assert f.message == "'sticky' is not a vllm-router policy"
    assert f.fix is not None and f.fix.startswith(
        "to keep each user's session on one replica, write consistent_hash (clients send X-Session-ID or "
        "X-User-ID) or sticky_least_loaded. The policies: random: each request to a random healthy replica; "
    )
    assert (
        "consistent_hash: keeps a user's session on one replica: requests with the same X-Session-ID" in f.fix
    )


def test_the_spec_reference_says_what_each_policy_does() -> None:
    text = (ROOT / "docs" / "spec.md").read_text(encoding="utf-8")
    (row,) = [line for line in text.splitlines() if line.startswith("| `policy` | `random`")]
    assert "consistent_hash: keeps a user's session on one replica" in row
    assert all(f"{p}: " in row for p in UPSTREAM_POLICIES)


def test_power_of_two_is_refused_with_a_reason_and_a_fix() -> None:
    # measured with 0.1.17 started without --worker-urls: "Power-of-two policy requires at least 2 workers"
    text = _with_gateway("  policy: power_of_two\n")
    f = _error(validate_text(text, "site.yaml"), ("gateway", "policy"))
    assert f.position == Position(_line(text, "  policy: power_of_two"), 11)
    assert "fewer than 2 --worker-urls" in f.message
    assert f.fix == "use 'sticky_least_loaded' (least loaded replica) or 'round_robin'"


def test_a_version_without_known_wheels_needs_them() -> None:
    text = _with_gateway('  router:\n    version: "0.1.18"\n')
    f = _error(validate_text(text, "site.yaml"), ("gateway", "router", "version"))
    assert f.position == Position(_line(text, '    version: "0.1.18"'), 14)
    assert f.fix is not None and "https://pypi.org/pypi/vllm-router/0.1.18/json" in f.fix


def test_given_wheels_pin_another_version() -> None:
    sha = "ab" * 32
    url = "https://mirror.example/vllm_router-0.1.18-cp38-abi3-manylinux_2_28_x86_64.whl"
    text = _with_gateway(
        f'  router:\n    version: "0.1.18"\n    wheels:\n      x86_64: {{url: "{url}", sha256: {sha}}}\n'
    )
    out = _all_vars(text)
    assert out["gateway_router_version"] == "0.1.18"
    assert out["gateway_router_wheels"]["x86_64"] == {
        "url_dir": "https://mirror.example",
        "sha256": sha,
        "filename": "vllm_router-0.1.18-cp38-abi3-manylinux_2_28_x86_64.whl",
    }


def test_metrics_and_api_on_one_port_is_refused() -> None:
    text = _with_gateway("  prometheus_port: 8080\n")
    f = _error(validate_text(text, "site.yaml"), ("gateway", "prometheus_port"))
    assert f.position == Position(_line(text, "  prometheus_port: 8080"), 20)


def test_render_hands_the_role_the_router_and_the_replica_heads() -> None:
    out = _all_vars(FLEET)
    assert out["gateway_enabled"] is True
    assert out["gateway_host"] == "edge-01"
    assert out["gateway_url"] == "http://10.50.0.5:8080"  # edge-01's address in the spec
    heads = [r["endpoint"].removesuffix("/v1") for r in out["rollout_replicas"]]
    assert out["gateway_worker_urls"] == heads and len(heads) == 4
    assert {a: w["sha256"] for a, w in out["gateway_router_wheels"].items()} == PYPI_SHA256
    args = out["gateway_router_args"]
    assert {a for a in args if a.startswith("--")} <= UPSTREAM_FLAGS
    assert "--worker-urls" not in args
    opts = dict(zip(args[::2], args[1::2], strict=True))
    assert opts["--host"] == "10.50.0.5" and opts["--port"] == "8080"
    assert opts["--prometheus-port"] == "29000" and opts["--policy"] == "round_robin"
    assert opts["--health-check-interval-secs"] == "10"  # not the router's 60 s: a dead replica leaves sooner


def test_render_follows_the_spec_values() -> None:
    text = _with_gateway(
        "  policy: cache_aware\n  prometheus_port: 29100\n"
        "  health_check: {interval_s: 3, failure_threshold: 2, endpoint: /ping}\n"
        "  retry: {enabled: false}\n  circuit_breaker: {enabled: false}\n"
    )
    args = _all_vars(text)["gateway_router_args"]
    assert "--disable-retries" in args and "--disable-circuit-breaker" in args
    assert not [a for a in args if a.startswith(("--retry-", "--cb-"))]
    flags = [a for a in args if a.startswith("--")]
    pairs = [a for a in args if a not in ("--disable-retries", "--disable-circuit-breaker")]
    opts = dict(zip(pairs[::2], pairs[1::2], strict=True))
    assert set(flags) <= UPSTREAM_FLAGS
    assert opts["--policy"] == "cache_aware" and opts["--prometheus-port"] == "29100"
    assert opts["--health-check-interval-secs"] == "3" and opts["--health-failure-threshold"] == "2"
    assert opts["--health-check-endpoint"] == "/ping"


def test_a_site_without_gateway_renders_none() -> None:
    out = _all_vars(FLEET.replace(GATEWAY_BLOCK, "gateway:\n  enabled: false\n"))
    assert out["gateway_enabled"] is False
    assert out["gateway_host"] is None and out["gateway_url"] is None and out["gateway_router_args"] == []


@pytest.mark.parametrize("name", ["gateway_enabled", "gateway_host", "gateway_url"])
def test_the_contract_variables_are_in_every_example(name: str) -> None:
    for path in sorted((ROOT / "inventories").glob("*/group_vars/all.yml")):
        if (path.parent.parent / "site.yaml").read_text(encoding="utf-8").startswith("# Generated by"):
            continue
        assert name in yaml.safe_load(path.read_text(encoding="utf-8")), path


def test_a_misspelt_policy_is_suggested_the_close_one() -> None:
    text = _with_gateway("  policy: round-robin\n")
    f = _error(validate_text(text, "site.yaml"), ("gateway", "policy"))
    assert f.fix is not None and f.fix.startswith("did you mean 'round_robin'? The policies: random: ")
