"""Views receive a narrow ``Cell`` (guards, budget, output sink, threads, the file mediator),
never the executor: no view imports the executor or reads a private field of its cell."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import safeexec.restricted.views as views_package
from safeexec.restricted.cell import Cell

_VIEWS = sorted(Path(views_package.__file__).parent.glob("*.py"))


def _reaches(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "safeexec.restricted.executor":
            found.append(f"{node.lineno}: imports the executor")
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            holder = _name(node.value)
            if holder in _HOLDERS:
                found.append(f"{node.lineno}: {holder}.{node.attr}")
    return found


_HOLDERS = {"cell", "_cell", "executor", "_executor"}


def _name(node: ast.expr) -> str | None:
    """The last name of ``cell`` or ``self._cell``."""
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


@pytest.mark.parametrize("path", _VIEWS, ids=[p.stem for p in _VIEWS])
def test_a_view_uses_only_what_its_cell_offers(path: Path) -> None:
    assert _reaches(path.read_text(encoding="utf-8")) == []


def test_the_check_finds_a_private_read_and_an_executor_import() -> None:
    source = (
        "from safeexec.restricted.executor import RestrictedExecutor\n"
        "cell._namespace\nself._cell._budget\n"
    )
    assert _reaches(source) == [
        "1: imports the executor",
        "2: cell._namespace",
        "3: _cell._budget",
    ]


def test_a_cell_offers_exactly_the_narrow_fields() -> None:
    assert set(Cell.__slots__) == {"guards", "budget", "sink", "threads", "files", "counting"}
