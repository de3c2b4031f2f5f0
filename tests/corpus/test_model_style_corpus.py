"""Our model-style corpus runs unchanged under each shipped pack, except the refusals it lists.

Each pack × mode runs every snippet through a real Session (``model_style_corpus.run_snippets``);
the set of snippets that do not run must equal ``expected_refusals.toml`` for that pack and mode,
so a new false refusal fails and so does a listed refusal that starts to run. The ratios the
issue sets (native + default >= 98 %, restricted + default measured) are asserted from the same run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from model_style_corpus import (
    expected_refusals,
    load_corpus,
    run_snippets,
)

COMBINATIONS = [
    ("default", "native"),
    ("default", "restricted"),
    ("data-analysis", "native"),
    ("strict", "restricted"),
]
CORPUS = load_corpus()


def test_the_corpus_is_large_and_names_are_unique() -> None:
    ids = [snippet.id for snippet in CORPUS]
    assert len(ids) >= 150
    assert len(set(ids)) == len(ids)
    areas = {snippet_id.split("/")[0] for snippet_id in ids}
    assert len(areas) >= 12


@pytest.mark.parametrize(("pack", "mode"), COMBINATIONS, ids=[f"{p}-{m}" for p, m in COMBINATIONS])
def test_snippets_run_unless_the_refusal_is_listed(pack: str, mode: str, tmp_path: Path) -> None:
    runs = list(run_snippets(CORPUS, pack=pack, mode=mode, workdir_root=tmp_path))
    assert len(runs) == len(CORPUS)
    failed = {run.id: run for run in runs if not run.ran}
    listed = expected_refusals(pack, mode)
    unexpected = {i: (r.verdict, r.status, r.rules, r.detail) for i, r in failed.items()}
    for snippet_id in listed:
        unexpected.pop(snippet_id, None)
    assert unexpected == {}, "snippets that no longer run (fix, or list with a reason)"
    now_running = sorted(set(listed) - set(failed))
    assert now_running == [], "listed refusals that run now: delete them from the list"
    if (pack, mode) == ("default", "native"):
        assert (len(runs) - len(failed)) / len(runs) >= 0.98
