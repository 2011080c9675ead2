"""The locked-memory limit as rendered for role host_tuning (spec tuning.memlock -> host_tuning_memlock):
the value a limits.conf line takes (limits.conf(5): a number of KiB, or 'unlimited'), or null."""

from __future__ import annotations

from typing import Any

from orchestrator.render.inventory import inventory_files
from tests.helpers import validate_data


def _npu_vars(data: dict[str, Any]) -> dict[str, Any]:
    result = validate_data(data)
    assert result.plan is not None and result.spec is not None, [f.message for f in result.errors]
    return inventory_files(result.spec, result.plan, "0" * 64)["group_vars/npu.yml"]


def test_memlock_is_unlimited_unless_the_spec_says_otherwise(single: dict[str, Any]) -> None:
    single.setdefault("tuning", {}).pop("memlock", None)
    assert _npu_vars(single)["host_tuning_memlock"] == "unlimited"
    single["tuning"]["memlock"] = 67108864  # 64 GiB in KiB
    assert _npu_vars(single)["host_tuning_memlock"] == "67108864"
    single["tuning"]["memlock"] = None
    assert _npu_vars(single)["host_tuning_memlock"] is None


def test_memlock_below_the_kernel_default_or_not_a_limit_is_refused(single: dict[str, Any]) -> None:
    for bad in (8, "lots", -1, True):
        single.setdefault("tuning", {})["memlock"] = bad
        errors = validate_data(single).errors
        assert any(f.path[:2] == ("tuning", "memlock") for f in errors), (bad, [f.message for f in errors])
