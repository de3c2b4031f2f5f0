"""The cyclic garbage collector, paused over bursts of allocation that leave no cycles behind."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector during a burst of allocations.

    Parsing allocates tens of thousands of syntax-tree nodes, freed by reference counting (the
    trees hold no cycles); a one-shot CLI command allocates mostly what it keeps until it exits
    (modules, classes, the policy). Such a burst would otherwise trigger collections that
    traverse the host's whole heap, each one longer the bigger the host; any cycles made
    meanwhile are collected after the pause. Nested or concurrent pauses are safe: only a pause
    that found the collector enabled turns it back on.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
