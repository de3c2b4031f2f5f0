"""The name resolver shared by the estimator and the scanner."""

from __future__ import annotations

import ast

import pytest

from safeexec.analysis.estimate import estimate
from safeexec.analysis.qualnames import dotted_name, import_bindings, qualified_name
from safeexec.gate import check
from safeexec.model.values import Action
from safeexec.parse import Parsed, parse
from safeexec.policy.loader import load_policy


def _bindings(code: str) -> list[tuple[str, str]]:
    stmt = ast.parse(code).body[0]
    assert isinstance(stmt, ast.Import | ast.ImportFrom)
    return list(import_bindings(stmt))


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("import os", [("os", "os")]),
        ("import os.path", [("os", "os")]),
        ("import os.path as p, json", [("p", "os.path"), ("json", "json")]),
        ("from os import system as s, getcwd", [("s", "os.system"), ("getcwd", "os.getcwd")]),
        ("from os import *", []),
        ("from . import x", [("x", ".x")]),
        ("from ..m import x", [("x", "..m.x")]),
    ],
)
def test_import_bindings(code: str, expected: list[tuple[str, str]]) -> None:
    assert _bindings(code) == expected


def test_qualified_name_follows_the_root_alias_only() -> None:
    aliases = {"o": "os", "np": "numpy", "b": "builtins"}
    expr = ast.parse("o.path.join").body[0]
    assert isinstance(expr, ast.Expr)
    assert qualified_name(expr.value, aliases) == ("os.path.join", True)
    assert qualified_name(ast.Name(id="path"), aliases) == ("path", False)
    assert qualified_name(ast.Attribute(value=ast.Name(id="b"), attr="open"), aliases) == (
        "open",
        True,
    )
    call = ast.parse("f().x").body[0]
    assert isinstance(call, ast.Expr)
    assert qualified_name(call.value, aliases) is None
    assert dotted_name(call.value) is None


def test_the_estimator_and_the_scanner_resolve_aliases_alike() -> None:
    # An aliased from-import: the estimator sizes numpy.zeros, the scanner reports os.system.
    parsed = parse(Action.create("from numpy import zeros as z\nz(10**6)"))
    assert isinstance(parsed, Parsed)
    assert estimate(parsed).memory.value == 8e6
    findings = check('from os import system as s\ns("ls")', load_policy("default")).findings
    assert "os.system" in [f.evidence for f in findings]
