"""Test lanes: the escape, compatibility, conformance and corpus suites are ``slow``.

``make test-fast`` (``pytest -m "not slow"``) runs the unit lane; ``make test`` and CI run all.
The lane follows from where a test lives, so a new escape test cannot land in the fast lane.
"""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SLOW_SUITES = frozenset({"escapes", "compat", "conformance", "corpus"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(item.path).resolve().relative_to(TESTS).parts
        if parts and parts[0] in SLOW_SUITES:
            item.add_marker(pytest.mark.slow)
