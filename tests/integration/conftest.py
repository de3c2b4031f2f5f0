"""The integration suites' shared fixtures: the reachability crawls of every shipped pack."""

from __future__ import annotations

import functools
import multiprocessing
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from safeexec.restricted_proof.reachability import CrawlReport


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if any("reachability_crawl" in getattr(item, "fixturenames", ()) for item in items):
        _start_crawls()


# Reachability crawls of every shipped pack in both modes, started when a selected test needs
# one and run in one background process while the other tests run (the crawls take seconds
# each; run in line they would hold up the suites that read them).
_crawler: list[ProcessPoolExecutor] = []
_crawls: dict[tuple[tuple[str, ...], bool], Future[CrawlReport]] = {}


def _start_crawls() -> None:
    from safeexec.policy import load_policy, shipped_packs
    from safeexec.restricted_proof.reachability import crawl

    pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
    _crawler.append(pool)
    # The doctor's test (strict only) is collected first: its pack is crawled first.
    for pack in sorted(shipped_packs(), key=lambda name: name != "strict"):
        imports = load_policy(pack).imports.allow
        for counting in (False, True):
            if (imports, counting) not in _crawls:
                job = functools.partial(crawl, imports, counting=counting)
                _crawls[imports, counting] = pool.submit(job)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    for pool in _crawler:
        pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="session")
def reachability_crawl() -> Callable[[tuple[str, ...], bool], CrawlReport]:
    """Crawl reports by (import allowlist, counting), each crawled once per test run.

    A crawl is seconds of deterministic work; the per-pack reachability test and the doctor's
    ``--reachability`` test read the same reports instead of crawling the same packs twice.
    Shipped packs were crawled in the background (a fresh process: no test's patches leak in);
    any other allowlist is crawled here.
    """
    from safeexec.restricted_proof.reachability import crawl

    reports: dict[tuple[tuple[str, ...], bool], CrawlReport] = {}

    def crawled(imports: tuple[str, ...], counting: bool) -> CrawlReport:
        key = (imports, counting)
        if key not in reports:
            started = _crawls.get(key)
            reports[key] = (
                started.result() if started is not None else crawl(imports, counting=counting)
            )
        return reports[key]

    return crawled
