"""Modules trade values, not each other's private fields (issue 28).

In the packages listed, no module reads ``obj._name`` of an object it was not written for:
only ``self``/``cls``, the module's own imports and its own module-level names may be followed
by a private name. The native
backend hands its sessions a ``WorkerSupply``, a session hands each call a ``CallScope``, and the
DSL's ops see the checker through a ``CheckerContext``; reaching past them fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import safeexec

_ROOT = Path(safeexec.__file__).parent
_PACKAGES = ("backends", "dsl", "session")


def _private_reads(source: str) -> list[str]:
    """``obj._name`` reads in ``source`` whose ``obj`` is not ``self``, ``cls``, an import or
    a module-level name of ``source``."""
    tree = ast.parse(source)
    own = {"self", "cls"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            own.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            own.update(target.id for target in targets if isinstance(target, ast.Name))
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and not (isinstance(node.value, ast.Name) and node.value.id in own)
        ):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("package", _PACKAGES)
def test_no_module_reads_another_objects_private_fields(package: str) -> None:
    reads = {
        str(path.relative_to(_ROOT)): found
        for path in sorted((_ROOT / package).rglob("*.py"))
        if (found := _private_reads(path.read_text()))
    }
    assert reads == {}


def test_the_check_sees_a_reach_into_another_object() -> None:
    assert _private_reads("def f(session):\n    return session._worker\n") == ["2: session._worker"]
    own = "import os\nclass A:\n    def f(self):\n        os._exit(self._x)\n"
    assert _private_reads(own) == []
