"""Parse an action with libcst *and* ``ast``; any failure or disagreement is a typed value.

(The ``parse`` function is being written; the value types below are the contract.)
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst

from safeexec.model import Action, Finding

__all__ = ["ParseFailure", "Parsed"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Parsed:
    """A successfully parsed action. ``code`` is the exact text that was checked and will run."""

    action: Action
    code: str
    module: libcst.Module
    tree: ast.Module


@dataclass(frozen=True, slots=True, kw_only=True)
class ParseFailure:
    """Why an action could not be parsed; ``finding`` is an ``SX0xx`` deny finding with a span."""

    action: Action
    finding: Finding
