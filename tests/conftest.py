"""Shared fixtures: deep copies of the example sites as plain data."""

from __future__ import annotations

import copy
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import load_example

PYTHONPATH_HOOKS = Path(__file__).parent / "pythonpath"


def pytest_configure(config: pytest.Config) -> None:
    """Every process the tests start (orchestrator, ansible-playbook and its workers) keeps Ansible's module
    payloads across runs: tests/pythonpath/ascend_testbed_ansiballz.py. ASCEND_TESTBED_ANSIBALLZ_CACHE=0
    turns it off; xdist workers inherit what the first process set."""
    if os.environ.get("ASCEND_TESTBED_ANSIBALLZ_CACHE") == "0":
        return
    os.environ.setdefault(
        "ASCEND_TESTBED_ANSIBALLZ_CACHE",
        str(Path(tempfile.gettempdir()) / f"ascend-testbed-ansiballz-{os.getuid()}"),
    )
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if str(PYTHONPATH_HOOKS) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(PYTHONPATH_HOOKS), *filter(None, paths)])


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
