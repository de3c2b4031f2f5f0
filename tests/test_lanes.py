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
    items = [
        _Item(TESTS / suite / "test_x.py")
        for suite in ("escapes", "compat", "conformance", "corpus", "faces", "analysis", "policy")
    ]
    items.append(_Item(TESTS / "test_escapes_named_like_a_suite.py"))
    hook(request.config, items)
    assert [item.markers for item in items] == [["slow"]] * 5 + [[]] * 3


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
