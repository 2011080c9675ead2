"""A spec field the pipeline never reads is a promise nothing keeps (rollout.gates.health_interval_s and
max_error_rate were such fields): every field of every spec model is read outside orchestrator/spec, and
every rollout gate setting reaches the rendered inventory."""

from __future__ import annotations

import re
import types
import typing
from typing import Any

import pytest
from pydantic import BaseModel

from orchestrator.render.inventory import inventory_files
from orchestrator.spec.site import SiteSpec
from tests.helpers import ROOT, load_example, validate_data

# Descriptive profile facts that nothing checks yet (preflight checks the architecture, `arch`). The list is
# exact: a field read later, or another unread one, fails the test.
UNREAD = {("HardwareProfile", "cpu"), ("HardwareProfile", "cpu_cores")}


def _models(model: type[BaseModel], seen: dict[str, type[BaseModel]]) -> dict[str, type[BaseModel]]:
    if model.__name__ in seen:
        return seen
    seen[model.__name__] = model
    for field in model.model_fields.values():
        stack: list[Any] = [field.annotation]
        while stack:
            tp = stack.pop()
            if isinstance(tp, type) and issubclass(tp, BaseModel):
                _models(tp, seen)
            stack.extend(typing.get_args(tp))
            if isinstance(tp, types.UnionType):
                stack.extend(tp.__args__)
    return seen


def _sources() -> str:
    pipeline = ROOT / "orchestrator"
    spec = pipeline / "spec"
    return "\n".join(
        p.read_text(encoding="utf-8") for p in sorted(pipeline.rglob("*.py")) if spec not in p.parents
    )


def test_every_spec_field_is_read_outside_the_spec() -> None:
    text = _sources()
    models = _models(SiteSpec, {})
    assert len(models) > 30, sorted(models)  # the walk reached the nested models
    unread = {
        (name, field)
        for name, model in models.items()
        for field in model.model_fields
        if not re.search(rf"\b{re.escape(field)}\b", text)
    }
    assert unread == UNREAD


# rollout.gates: another valid value for each field, chosen by hand
OTHER_GATES: dict[str, Any] = {
    "startup_timeout_s": 900,
    "health_interval_s": 7,
    "weights_read_mb_s": 50,
    "smoke_prompts": 5,
    "accuracy_tolerance": 0.02,
    "max_error_rate": 0.25,
    "latency_budget_s": 12.5,
    "drain_timeout_s": 90,
    "soak_s": 11,
    "progress_interval_s": 45,
    "soak_batches": "all",
}


def _rendered(data: dict[str, Any]) -> dict[str, Any]:
    res = validate_data(data)
    assert res.spec is not None and res.plan is not None, res
    return inventory_files(res.spec, res.plan, "0" * 64)


def test_the_hand_list_covers_every_gate_field() -> None:
    from orchestrator.spec.operations import Gates

    assert set(OTHER_GATES) == set(Gates.model_fields)


@pytest.mark.parametrize("field", sorted(OTHER_GATES))
def test_every_rollout_gate_setting_reaches_the_rendered_inventory(field: str) -> None:
    data = load_example("a2-fleet-gateway")
    before = _rendered(data)
    rollout = dict(data.get("rollout") or {})
    rollout["gates"] = {**(rollout.get("gates") or {}), field: OTHER_GATES[field]}
    after = _rendered({**data, "rollout": rollout})
    assert after != before, field


def test_health_interval_and_error_budget_as_the_serve_role_reads_them() -> None:
    data = load_example("a2-fleet-gateway")
    gates = {"health_interval_s": 7, "max_error_rate": 0.25}
    data["rollout"] = {**(data.get("rollout") or {}), "gates": gates}
    all_vars = _rendered(data)["group_vars/all.yml"]
    assert (all_vars["vllm_serve_ready_interval_s"], all_vars["rollout_max_error_rate"]) == (7, 0.25)
    tasks = (ROOT / "roles/vllm_serve/tasks/rollout_gates.yml").read_text(encoding="utf-8")
    assert 'interval_s: "{{ vllm_serve_ready_interval_s }}"' in tasks
    assert 'max_error_rate: "{{ rollout_max_error_rate }}"' in tasks
