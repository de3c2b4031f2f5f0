"""Every usage and configuration error of every command, run as a user runs it (the console
script, a fresh process), many times and many at once: one line on stderr, the documented
status, no traceback, no Python repr, ever; and every other documented status, reached.

The load is the runs themselves: :data:`WORKERS` processes at once on a machine with fewer
cores, each starting its interpreter, importing, and (for ``run``) booting a sandbox template
that a usage error then tears down, which is where a traceback used to slip out.
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.cli.error_paths import (
    ERROR_PATHS,
    OUTCOME_PATHS,
    ErrorPath,
    Run,
    contract_breaches,
    prepare,
    run_path,
)

REPETITIONS = 4
WORKERS = 8
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("cli-contract")
    prepare(tmp)
    return tmp


def _run_all(paths: list[ErrorPath], tmp: Path) -> list[tuple[ErrorPath, Run]]:
    with ThreadPoolExecutor(WORKERS) as pool:
        return list(zip(paths, pool.map(lambda p: run_path(p, tmp, repo=REPO), paths), strict=True))


def test_every_error_path_keeps_the_contract_every_time_under_load(prepared: Path) -> None:
    # Interleaved (path 1..n, then again), so each path runs beside different others each time.
    runs = _run_all([*ERROR_PATHS] * REPETITIONS, prepared)
    breaches = Counter(
        f"{path.id}: {breach}" for path, run in runs for breach in contract_breaches(path, run)
    )
    traced = [f"{path.id}:\n{run.stderr}" for path, run in runs if "Traceback" in run.stderr]
    assert len(runs) == len(ERROR_PATHS) * REPETITIONS
    assert not traced, f"{len(traced)} tracebacks; the first:\n{traced[0]}"
    assert not breaches, "\n".join(f"{n}x {what}" for what, n in breaches.most_common())


def test_every_other_documented_status_is_the_real_one(prepared: Path) -> None:
    for path, run in _run_all(list(OUTCOME_PATHS), prepared):
        assert "Traceback" not in run.stderr, (path.id, run.stderr)
        assert run.status == path.status, (path.id, run.stdout[-400:], run.stderr[-400:])
        assert path.says in run.stdout, (path.id, run.stdout[-400:])
