"""Shared fixtures: deep copies of the example sites as plain data."""

from __future__ import annotations

import copy
import os
from typing import Any

import pytest

from tests.helpers import load_example


@pytest.fixture
def pair() -> dict[str, Any]:
    """Two Atlas 800T A2 servers, one DeepSeek-R1-W8A8 replica (DP4 x TP4 + EP)."""
    return copy.deepcopy(load_example("a2-pair-r1-w8a8"))


@pytest.fixture
def single() -> dict[str, Any]:
    """One Atlas 800T A2, two TP4 replicas of R1-Distill-Qwen-32B."""
    return copy.deepcopy(load_example("a2-single-distill"))


@pytest.fixture
def a3() -> dict[str, Any]:
    return copy.deepcopy(load_example("a3-single-r1-w8a8"))


@pytest.fixture
def duo() -> dict[str, Any]:
    return copy.deepcopy(load_example("duo-300i-distill"))


@pytest.fixture
def fleet() -> dict[str, Any]:
    return copy.deepcopy(load_example("a2-fleet-gateway"))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The run's golden snapshots (tests/integration/sim/goldens.py) go when the whole run ends: here, in
    the only process without xdist or in xdist's controller (which loads this file, not the integration
    conftest), never in a worker."""
    if hasattr(session.config, "workerinput") or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    base = session.config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    if (base / "goldens").is_dir():
        from tests.integration.sim import goldens

        goldens.remove_all(base)
