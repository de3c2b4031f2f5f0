"""Every ablation task's reference reproduces its answer in every backend that runs it: the
Python reference in native and restricted mode, ``reference_dsl`` in the dsl mode (slow lane:
one fresh session per task and mode)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.ablation.run import SUITE_DIR, reference_reproduces
from safeexec.harness import load_suite

SUITE = load_suite(SUITE_DIR)


@pytest.mark.parametrize("mode", ["native", "restricted"])
def test_every_reference_reproduces_its_answer(mode: str, tmp_path: Path) -> None:
    failing = [t.id for t in SUITE.tasks if not reference_reproduces(SUITE, t, mode, tmp_path)]
    assert failing == []


def test_every_reference_dsl_reproduces_its_answer(tmp_path: Path) -> None:
    expressible = [t for t in SUITE.tasks if t.reference_dsl is not None]
    assert len(expressible) >= 0.8 * len(SUITE.tasks)
    assert [t.id for t in expressible if not reference_reproduces(SUITE, t, "dsl", tmp_path)] == []
