"""Test lanes: a suite directory directly under ``tests/`` named in ``SLOW_SUITES`` is ``slow``.

Slow are the escape, compatibility, conformance and corpus suites; the suites that start real
servers or whole benchmark runs (faces, service, benchmarks); ``integration/`` (mirrors the package:
multi-second suites that drive real workers, agent loops, reachability crawls, the docs'
walkthroughs); ``properties/`` (mirrors the package: hypothesis and hypothesmith suites over
generated programs); and ``rungs/`` (every rung of the confinement ladder, each in a simulated
container or unprivileged host). Every other directory is the unit lane, with a thin smoke of
each backend.

``make test-fast`` (``pytest -m "not slow"``) runs the unit lane and does not even collect the slow
suites; ``make test`` and CI run all. The lane follows from where a test lives, so a new escape test
cannot land in the fast lane.
"""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SLOW_SUITES = frozenset(
    {
        "escapes",
        "compat",
        "conformance",
        "corpus",
        "faces",
        "service",
        "benchmarks",
        "integration",
        "properties",
        "rungs",
    }
)
# The mark expression of ``make test-fast``: under it, no test of a slow suite can be selected.
FAST_LANE = "not slow"


def _suite(path: Path) -> str | None:
    parts = path.resolve().relative_to(TESTS).parts
    return parts[0] if parts else None


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # Importing every slow module only to deselect its tests cost the fast lane most of its
    # collection time; under the fast lane's expression a slow suite is not collected at all.
    in_fast_lane = config.getoption("markexpr") == FAST_LANE
    if in_fast_lane and collection_path.is_dir() and collection_path.name in SLOW_SUITES:
        return collection_path.resolve().parent == TESTS or None
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _suite(Path(item.path)) in SLOW_SUITES:
            item.add_marker(pytest.mark.slow)
