"""Fixtures: backend stubs and the real vllm-router, each stopped at the end of its test."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.unit.gateway_pd.router import Router, require_router
from tests.unit.gateway_pd.stubs import Backend, Role

ROUTER_HOST = "127.0.26.1"
PREFILL_HOST = "127.0.26.2"  # the router waits for "unique hosts": prefill and decode on their own addresses
DECODE_HOST = "127.0.26.3"


@pytest.fixture(scope="session", autouse=True)
def installed_router() -> str:
    return require_router()


@pytest.fixture
def backend() -> Iterator[Callable[..., Backend]]:
    made: list[Backend] = []

    def make(role: Role, **kw: object) -> Backend:
        host = PREFILL_HOST if role == "prefill" else DECODE_HOST
        made.append(Backend(role, str(kw.pop("host", host)), **kw).start())  # type: ignore[arg-type]
        return made[-1]

    yield make
    for b in made:
        b.stop()


@pytest.fixture
def router() -> Iterator[Callable[..., Router]]:
    made: list[Router] = []

    def make(args: list[str], env: dict[str, str] | None = None) -> Router:
        made.append(Router(ROUTER_HOST, args, env=env or {}).start())
        return made[-1]

    yield make
    for r in made:
        r.stop()
