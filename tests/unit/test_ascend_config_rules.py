"""vllm-ascend's --additional-config: environment variables v0.23.0 moved into it warn with their replacement,
and a value that is not a JSON object is refused like a malformed --speculative-config.

Upstream: tests/data/upstream/vllm-ascend/v0.23.0 (additional_config.md's migration table, envs.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from orchestrator.validation.ascend_config import MIGRATED_ENV
from tests.helpers import validate_data

UPSTREAM = Path(__file__).resolve().parents[1] / "data/upstream/vllm-ascend/v0.23.0"
GUIDE = UPSTREAM / "docs/source/user_guide/configuration/additional_config.md"
ENVS = UPSTREAM / "vllm_ascend/envs.py"


def _migration_table() -> dict[str, tuple[str, bool]]:
    """The guide's Quick Reference: env var -> (config key, whether "1"/"0" become true/false)."""
    section = GUIDE.read_text(encoding="utf-8").split("### Quick Reference", 1)[1].split("###", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| `(\w+)` \| (.+?) \|$", section, re.M)
    return {env: (key, "→ `true`" in conv) for env, key, conv in rows}


def test_migrated_variables_are_the_guides() -> None:
    table = _migration_table()
    assert len(table) == 9 and table["VLLM_ASCEND_BALANCE_SCHEDULING"] == ("enable_balance_scheduling", True)
    assert dict(MIGRATED_ENV) == table
    envs = ENVS.read_text(encoding="utf-8")
    assert "DEPRECATED: VLLM_ASCEND_BALANCE_SCHEDULING env var will be removed" in envs


@pytest.mark.parametrize("name", sorted(_migration_table()))
def test_a_migrated_variable_warns_with_its_replacement(a3: dict[str, Any], name: str) -> None:
    key, as_bool = _migration_table()[name]
    a3["serving"]["env"] = {name: "1"}
    result = validate_data(a3)
    assert result.ok
    (warn,) = [f for f in result.warnings if f.path == ("serving", "env", name)]  # passed silently before
    assert f"{name} is deprecated in vllm-ascend v0.23.0" in warn.message and key in warn.message
    flag, value = (warn.fix or "").split("extra_args: ", 1)[1].split(" ", 1)
    assert flag == "--additional-config"
    assert json.loads(value.split("'")[1]) == {key: True if as_bool else 1}


def test_older_releases_do_not_warn(pair: dict[str, Any]) -> None:
    pair["software"]["vllm_ascend"] = {"version": "v0.13.0"}
    pair["serving"]["env"] = {"VLLM_ASCEND_BALANCE_SCHEDULING": "1"}
    path = ("serving", "env", "VLLM_ASCEND_BALANCE_SCHEDULING")
    assert not [f for f in validate_data(pair).findings if f.path == path]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ('{"enable_balance_scheduling": true', "is not JSON"),  # the parser passed it through as a string
        ("enable_balance_scheduling=true", "is not JSON"),
        ("{'enable_balance_scheduling': True}", "is not JSON"),
        ("[1]", "is JSON but not an object"),
    ],
)
def test_malformed_additional_config_is_refused(a3: dict[str, Any], value: str, says: str) -> None:
    a3["serving"]["extra_args"] += ["--additional-config", value]
    at = len(a3["serving"]["extra_args"]) - 2
    (err,) = [f for f in validate_data(a3).errors if f.path[:2] == ("serving", "extra_args")]
    assert err.path == ("serving", "extra_args", at) and says in err.message
    assert "--additional-config" in err.message and "JSON object" in (err.fix or "")


def test_a_json_object_passes_like_the_speculative_config(a3: dict[str, Any]) -> None:
    a3["serving"]["extra_args"] += ["--additional-config", '{"enable_balance_scheduling": true}']
    assert validate_data(a3).ok


@pytest.mark.parametrize(
    ("name", "value", "replacement"),
    [
        ("VLLM_ASCEND_BALANCE_SCHEDULING", "0", {"enable_balance_scheduling": False}),  # "0" -> false
        ("VLLM_ASCEND_FLASHCOMM2_PARALLEL_SIZE", "2", {"enable_flashcomm2_parallel_size": 2}),  # unchanged
        ("VLLM_ASCEND_ENABLE_NZ", "0", {"weight_nz_mode": 0}),  # an integer key: 0 stays 0
        ("VLLM_ASCEND_ENABLE_MLAPO", "yes", {"enable_mlapo": "yes"}),  # not a number: passed as written
    ],
)
def test_the_replacement_converts_as_the_guide_says(
    a3: dict[str, Any], name: str, value: str, replacement: dict[str, Any]
) -> None:
    a3["serving"]["env"] = {name: value}
    (warn,) = [f for f in validate_data(a3).findings if f.path == ("serving", "env", name)]
    assert json.loads((warn.fix or "").split("--additional-config '", 1)[1].split("'", 1)[0]) == replacement
