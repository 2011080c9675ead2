"""A simulated cluster for the integration tests: brought up once per module in a scratch root and
removed at the end (see sim_helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.sim.sim_helpers import Sim, module_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    """Two Atlas 800T A2 servers, up for the whole module; `sim down` at the end."""
    yield from module_cluster(tmp_path_factory, "it", "--nodes", "2")
