"""Huge, negative and non-finite numbers: every numeric field of the spec is bounded; nothing overflows."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.pipeline import validate_text
from orchestrator.spec.findings import format_finding
from tests.helpers import load_example, to_yaml
from tests.hostile import assert_refused, cli, startup_cpu


@pytest.fixture(scope="module")
def startup_s(tmp_path_factory: pytest.TempPathFactory) -> float:
    return startup_cpu(tmp_path_factory.mktemp("startup"))


# ---------------------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (".inf", "finite number"),
        ("-.inf", "finite number"),
        (".nan", "finite number"),
        ("1e300", "less than or equal to 10000"),
        ("1e400", "finite number"),
        ("-5", "greater than 0"),
        ("9" * 5000, "a number with 5,000 digits"),
    ],
)
def test_huge_and_non_finite_params_b(tmp_path: Path, startup_s: float, value: str, needle: str) -> None:
    data = load_example("a2-single-distill")
    data["model"] = {
        "name": "my-model",
        "weights_path": "/data/models/my-model",
        "architecture": {"params_b": 7, "layers": 28, "hidden_size": 3584, "heads": 28, "kv_heads": 4},
    }
    text = to_yaml(data).replace("params_b: 7\n", f"params_b: {value}\n")
    spec = tmp_path / "site.yaml"
    spec.write_text(text, encoding="utf-8")
    line = text.splitlines().index(f"    params_b: {value}") + 1
    assert_refused(cli("validate", str(spec)), startup_s, f"{spec}:{line}:15", needle)


def _numeric_site() -> dict[str, object]:
    """An example with every optional section that holds a number written out."""
    data = load_example("a2-pair-r1-w8a8")
    data["profiles"]["atlas-800t-a2"] |= {"devices_per_card": 1, "hbm_gb": 64, "cpu_cores": 192}
    data["profiles"]["atlas-800t-a2"]["memory_gb"] = 1024
    data["servers"][0]["ssh_port"] = 22
    data["servers"][0]["overrides"] = {"sysctls": {"vm.swappiness": 0}}
    data["model"] = {
        "name": "my-model",
        "weights_path": "/data/models/my-model",
        "source": {"type": "staged", "bwlimit_mib_s": 100, "seeds": 2, "port": 8873},
        "architecture": {
            "params_b": 7,
            "expert_params_b": 0,
            "layers": 28,
            "hidden_size": 3584,
            "heads": 28,
            "kv_heads": 4,
            "head_dim": 128,
            "kv_lora_rank": 0,
            "qk_rope_head_dim": 0,
            "max_position_embeddings": 32768,
        },
    }
    data["network"]["hccn"] |= {"first_host": 10, "mtu": 4200}
    data["software"]["container_runtime"] = {"log_max_files": 5}
    data["software"]["reboot"] = {"batch_size": 2, "timeout_s": 600}
    data["software"]["disk"] = {"packages_gib": 4, "images_gib": 60}
    data["tuning"] = {
        "memlock": 65536,
        "sysctls": {"vm.swappiness": 0},
        "hugepages": {"count": 0},
        "rdma_modules": {"mlx5_core": {"num_vfs": 0}},
    }
    serving = data["serving"]
    serving |= {"port": 8000, "dp_rpc_port": 13389, "max_num_seqs": 8, "max_num_batched_tokens": 4096}
    serving |= {"max_model_len": 8192, "gpu_memory_utilization": 0.9}
    serving["parallelism"] |= {"pp": 1}
    serving["hccl"] = {"buffsize_mb": 200, "connect_timeout_s": 120, "exec_timeout_s": 1836}
    serving["replicas"][0] |= {"port": 8000, "devices": [0, 1, 2, 3, 4, 5, 6, 7]}
    serving["replicas"][0]["parallelism"] = {"tp": 4, "dp": 4}
    pool = {
        "port": 7100,
        "kv_port": 36000,
        "dp_rpc_port": 12321,
        "max_num_seqs": 8,
        "max_num_batched_tokens": 4096,
        "gpu_memory_utilization": 0.9,
        "hccl_buffsize_mb": 256,
        "parallelism": {"tp": 2, "pp": 1, "dp": 1},
        "instances": [
            {
                "name": "p1",
                "servers": ["a2-01"],
                "devices": [0, 1],
                "kv_port": 36000,
                "port": 7100,
                "dp_rpc_port": 12321,
            }
        ],
    }
    # the numbers of serving.disaggregation (next to replicas: the both-set error is not a type or value one)
    serving["disaggregation"] = {
        "abort_request_timeout_s": 480,
        "prefill": pool,
        "decode": pool | {"instances": [{"name": "d1", "servers": ["a2-02"], "devices": [0]}]},
    }
    data["rollout"] = {
        "canary": 1,
        "batch_size": 1,
        "max_fail_percentage": 0,
        "min_available": 0,
        "gates": {
            "startup_timeout_s": 600,
            "health_interval_s": 10,
            "weights_read_mb_s": 1000,
            "smoke_prompts": 3,
            "accuracy_tolerance": 0.005,
            "max_error_rate": 0.0,
            "latency_budget_s": 30.0,
            "drain_timeout_s": 60,
            "soak_s": 5,
            "progress_interval_s": 30,
        },
        "warmup": {"long_prompt_tokens": 1024, "max_rounds": 5, "settle_ratio": 1.25},
    }
    data["gateway"] = {
        "enabled": False,
        "port": 8080,
        "prometheus_port": 29000,
        "request_timeout_s": 1800,
        "max_concurrent_requests": 32768,
        "queue_size": 100,
        "queue_timeout_s": 60,
        "worker_startup_timeout_s": 1800,
        "worker_startup_check_interval_s": 5,
        "health_check": {"interval_s": 10, "timeout_s": 5, "failure_threshold": 3, "success_threshold": 2},
        "retry": {
            "max_retries": 3,
            "initial_backoff_ms": 50,
            "max_backoff_ms": 30000,
            "backoff_multiplier": 1.5,
            "jitter_factor": 0.2,
        },
        "circuit_breaker": {
            "failure_threshold": 10,
            "success_threshold": 3,
            "timeout_s": 60,
            "window_s": 120,
        },
    }
    data["monitoring"] = {
        "prometheus_port": 9090,
        "node_exporter_port": 9100,
        "npu_exporter_port": 8082,
        "scrape_interval_s": 15,
        "retention_days": 15,
    }
    data["bench"] = {
        "concurrency": [1, 4, 16],
        "duration_s": 30,
        "prompt_tokens": 256,
        "max_tokens": 128,
        "slo": {
            "ttft_p99_ms": 2000,
            "itl_p99_ms": 100,
            "latency_p99_ms": 20000,
            "min_request_throughput_rps": 5,
            "min_output_throughput_tps": 500,
        },
    }
    data["spec_version"] = 1
    return data


def _numeric_paths(node: object, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Paths of every number in the data (bools are not numbers)."""
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _numeric_paths(v, (*path, k))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _numeric_paths(v, (*path, i))]
    return [path] if isinstance(node, int | float) and not isinstance(node, bool) else []


def _numeric_fields() -> set[tuple[str, str]]:
    """(model, field) of every field of the spec models whose type admits a number."""
    import typing

    from orchestrator.spec.docs import _models
    from orchestrator.spec.site import SiteSpec

    def numeric(annotation: object) -> bool:
        if annotation in (int, float):
            return True
        return any(numeric(a) for a in typing.get_args(annotation))

    return {
        (m.__name__, name)
        for m in _models(SiteSpec)
        for name, field in m.model_fields.items()
        if numeric(field.annotation)
    }


def test_the_numeric_site_writes_every_numeric_field() -> None:
    """The test below covers every numeric field of the spec models only if the site writes them all."""
    from orchestrator.spec.structural import model_at

    data = _numeric_site()
    assert validate_data_ok(data)
    covered = set()
    for path in _numeric_paths(data):
        names = [i for i, p in enumerate(path) if isinstance(p, str)]
        for i in reversed(names):
            model = model_at(path[:i])
            if model is not None and path[i] in model.model_fields:
                covered.add((model.__name__, path[i]))
                break
    assert _numeric_fields() - covered == set()


def validate_data_ok(data: dict[str, object]) -> bool:
    result = validate_text(to_yaml(data))
    return not [f for f in result.errors if f.code in ("type", "value")]


@pytest.mark.parametrize("value", ["1e300", ".inf", ".nan", "-1e300", "9" * 60])
def test_every_numeric_field_refuses_huge_and_non_finite_values(value: str) -> None:
    data = _numeric_site()
    for path in _numeric_paths(data):
        node: object = data
        for part in path[:-1]:
            node = node[part]  # type: ignore[index]
        original = node[path[-1]]  # type: ignore[index]
        node[path[-1]] = "@@NUMBER@@"  # type: ignore[index]
        text = to_yaml(data).replace("'@@NUMBER@@'", value)
        node[path[-1]] = original  # type: ignore[index]
        result = validate_text(text)
        at = [f for f in result.errors if f.path == path]
        assert at, f"{path} = {value} was accepted: {[format_finding(f, 's') for f in result.findings]}"
        lines = text.splitlines()
        assert all(f.position is not None and value in lines[f.position.line - 1] for f in at)
