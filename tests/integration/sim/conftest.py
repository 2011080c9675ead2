"""A simulated cluster for the integration tests: brought up once per module in a scratch root and
removed at the end (see sim_helpers.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.integration.sim.sim_helpers import Sim, bring_up


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    """Two Atlas 800T A2 servers, up for the whole module; `sim down` at the end."""
    root = tmp_path_factory.mktemp("simroot")
    sim = bring_up(root, f"it{os.getpid() % 100000}", "--nodes", "2")
    try:
        yield sim
    finally:
        sim.sim("down", check=False)
