"""Pause CPython's cyclic garbage collector while a large acyclic tree is built."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Loading and validating a spec allocates hundreds of thousands of objects and no reference cycles;
    every collector pass walks all of them again, which doubles the time of a 20,000-server spec. Whatever
    cyclic garbage there is gets collected after the block, as usual."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
