"""Test lanes: the escape, compatibility, conformance and corpus suites are ``slow``.

``make test-fast`` (``pytest -m "not slow"``) runs the unit lane; ``make test`` and CI run all.
The lane follows from where a test lives, so a new escape test cannot land in the fast lane.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from safeexec.sandbox.restricted.reachability import CrawlReport

TESTS = Path(__file__).resolve().parent
SLOW_SUITES = frozenset({"escapes", "compat", "conformance", "corpus"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(item.path).resolve().relative_to(TESTS).parts
        if parts and parts[0] in SLOW_SUITES:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def reachability_crawl() -> Callable[[tuple[str, ...], bool], CrawlReport]:
    """Crawl reports by (import allowlist, counting), each crawled once per test run.

    A crawl is seconds of deterministic work; the per-pack reachability test and the doctor's
    ``--reachability`` test read the same reports instead of crawling the same packs twice.
    """
    from safeexec.sandbox.restricted.reachability import crawl

    reports: dict[tuple[tuple[str, ...], bool], CrawlReport] = {}

    def crawled(imports: tuple[str, ...], counting: bool) -> CrawlReport:
        key = (imports, counting)
        if key not in reports:
            reports[key] = crawl(imports, counting=counting)
        return reports[key]

    return crawled
