"""A simulated cluster for the integration tests: brought up once per module in a scratch root and
removed at the end (see sim_helpers.py), or a copy of a converged cluster saved once per run (goldens.py).

Every module is one pytest-xdist group (`--dist loadgroup`: a module's tests share its cluster and run in
file order on one worker); the modules of one golden share its group. Groups are sent out longest first."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.integration.sim.sim_helpers import Sim, module_cluster

# Relative wall seconds of each group (measured on the 2-core machine with both workers busy; scripts/test
# prints the latest): only their order matters, for the longest-first start.
COST = {
    "golden-mx": 4200,  # + test_pd_serving (the mx copy turned PD)
    "golden-hl": 2400,
    "golden-s1": 1390,
    "test_weights_phase": 440,
    "test_image_phase": 410,
    "test_apply_runner": 340,
    "test_host_tuning": 250,
    "test_container_runtime": 210,
    "test_drivers_phase": 200,
    "test_sim_hccn_network": 120,
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    """Two Atlas 800T A2 servers, up for the whole module; `sim down` at the end."""
    yield from module_cluster(tmp_path_factory, "it", "--nodes", "2", "--no-image-base")


def _group(item: pytest.Item) -> str:
    mark = item.get_closest_marker("xdist_group")
    if mark is not None:
        return str(mark.args[0] if mark.args else mark.kwargs["name"])
    return item.path.stem


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each integration module its own xdist group unless it names one; longest groups first (a stable
    sort: the tests of a module keep their file order)."""
    here = os.path.dirname(__file__)
    mine = [i for i in items if str(i.path).startswith(here)]
    for item in mine:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(_group(item)))
    if mine:
        rank = {id(i): -COST.get(_group(i), 100) for i in mine}
        others = [i for i in items if id(i) not in rank]
        items[:] = others + sorted(mine, key=lambda i: rank[id(i)])
