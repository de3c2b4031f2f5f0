"""What a session's template imports before it forks the session: the data-stack modules the
session's policy lets its code import, so that a first ``import pandas`` costs what a later one
does. A policy that refuses a module never has it preloaded: the gate that decides the session's
steps decides this too, on ``import <module>`` in the session's mode.
"""

from __future__ import annotations

import functools
import importlib.util

from safeexec.backends.registry import PRELOADING_MODES
from safeexec.gate import check
from safeexec.model.values import Verdict
from safeexec.policy.schema import Policy

__all__ = ["DATA_STACK", "data_preload"]

DATA_STACK: tuple[str, ...] = ("numpy", "pandas", "matplotlib")
"""The modules a template preloads when the policy allows them (and they are installed)."""


def data_preload(policy: Policy, mode: str) -> tuple[str, ...]:
    """The modules of :data:`DATA_STACK` installed here whose import ``policy`` allows in
    ``mode``; none for a mode without a template (see ``PRELOADING_MODES``)."""
    if mode not in PRELOADING_MODES:
        return ()
    return tuple(
        name
        for name in DATA_STACK
        if check(f"import {name}\n", policy, backend=mode).decision.verdict is Verdict.ALLOW
        and _installed(name)
    )


@functools.cache
def _installed(name: str) -> bool:
    """Whether ``name`` can be imported here (asked once per process: every session opened
    after the first would otherwise search ``sys.path`` again)."""
    return importlib.util.find_spec(name) is not None
