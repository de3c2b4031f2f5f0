"""The slow marker follows the directory: the root conftest's ``SLOW_SUITES`` are slow."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import pytest

TESTS = Path(__file__).resolve().parent


@dataclass
class _Item:
    path: Path
    markers: list[str] = field(default_factory=list)

    def add_marker(self, marker: pytest.MarkDecorator) -> None:
        self.markers.append(marker.name)


def _root_conftest() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tests_root_conftest", TESTS / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lanes_hook() -> Callable[..., None]:
    hook: Callable[..., None] = _root_conftest().pytest_collection_modifyitems
    return hook


def test_tests_under_the_slow_suites_are_marked_slow(request: pytest.FixtureRequest) -> None:
    hook = _lanes_hook()
    slow = (
        "escapes",
        "compat",
        "conformance",
        "corpus",
        "faces",
        "integration",
        "properties",
        "rungs",
    )
    items = [_Item(TESTS / suite / "test_x.py") for suite in slow]
    # The slow mirrors of the package are slow at any depth; the unit lane's directories are not.
    items.append(_Item(TESTS / "integration" / "backends" / "test_x.py"))
    items.append(_Item(TESTS / "properties" / "dsl" / "test_x.py"))
    unit = [
        _Item(TESTS / "analysis" / "test_x.py"),
        _Item(TESTS / "backends" / "test_x.py"),
        _Item(TESTS / "sandbox" / "escapes" / "test_x.py"),
        _Item(TESTS / "test_escapes_named_like_a_suite.py"),
    ]
    hook(request.config, items + unit)
    assert [item.markers for item in items] == [["slow"]] * len(items)
    assert [item.markers for item in unit] == [[]] * len(unit)


@dataclass
class _Config:
    markexpr: str

    def getoption(self, name: str) -> str:
        assert name == "markexpr"
        return self.markexpr


def test_the_fast_lane_does_not_collect_the_slow_suites() -> None:
    ignore = _root_conftest().pytest_ignore_collect
    fast, everything, slow_only = _Config("not slow"), _Config(""), _Config("slow")
    assert ignore(TESTS / "escapes", fast) is True
    assert ignore(TESTS / "integration", fast) is True
    # Only whole suites are left out, and only under the fast lane's expression.
    assert ignore(TESTS / "backends", fast) is None
    assert ignore(TESTS / "restricted", fast) is None
    assert ignore(TESTS / "escapes", everything) is None
    assert ignore(TESTS / "escapes", slow_only) is None


def test_make_test_fast_selects_with_the_expression_the_collection_skip_knows() -> None:
    makefile = (TESTS.parent / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ntest-fast:", 1)[1].splitlines()[1]
    assert f'-m "{_root_conftest().FAST_LANE}"' in recipe
    # The other Pythons' unit lane (make test-py) too.
    matrix = makefile.split("\ntest-py:", 1)[1].split("\n\n", 1)[0]
    assert f'pytest -q -m "{_root_conftest().FAST_LANE}"' in matrix


def test_every_collected_test_is_in_the_lane_of_its_directory(
    request: pytest.FixtureRequest,
) -> None:
    items = request.session.items
    assert request.node in items
    slow_suites = _root_conftest().SLOW_SUITES
    for item in items:
        suite = Path(item.path).resolve().relative_to(TESTS).parts[0]
        slow = item.get_closest_marker("slow") is not None
        assert slow == (suite in slow_suites), item.nodeid
