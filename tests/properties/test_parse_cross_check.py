"""The parse with libcst's cross-check only where needed agrees with the parse that always runs it.

Differential over every corpus of Python this repository holds (policy-pack cases, the
model-style corpus, the examples, the escape tests' sources, the benchmark's programs) and over
generated programs: same outcome, same checked text and tree, same finding.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings

from safeexec.model import Action
from safeexec.parse import Parsed, ParseFailure, parse

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ("policies", "tests/corpus", "tests/escapes", "examples")
_CELL_MARK = "# %% "


def _corpus() -> dict[str, str]:
    texts: dict[str, str] = {}
    for corpus in CORPORA:
        for path in sorted((ROOT / corpus).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            name = str(path.relative_to(ROOT))
            texts[name] = text
            cells = text.split(_CELL_MARK)
            if len(cells) > 1:
                texts.update({f"{name}#{n}": cell for n, cell in enumerate(cells)})
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_check
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    texts.update({f"bench_check-{n}": bench_check.program(n) for n in (60, 600)})
    return texts


CORPUS = _corpus()


def _assert_same(code: str) -> Parsed | ParseFailure:
    action = Action.create(code)
    fast = parse(action)
    full = parse(action, always_cross_check=True)
    if isinstance(full, ParseFailure):
        assert isinstance(fast, ParseFailure), full.finding
        assert fast.finding == full.finding
    else:
        assert isinstance(fast, Parsed), fast.finding
        assert fast.code == full.code
        assert ast.dump(fast.tree, include_attributes=True) == ast.dump(
            full.tree, include_attributes=True
        )
    return fast


def test_the_corpora_are_not_empty() -> None:
    assert len(CORPUS) > 100
    parsed = [isinstance(parse(Action.create(code)), Parsed) for code in CORPUS.values()]
    assert sum(parsed) > 100  # most of the corpus is valid Python: the Parsed branch is compared


@pytest.mark.filterwarnings("ignore::SyntaxWarning", "ignore::DeprecationWarning")
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_both_paths_agree_on_the_corpus(name: str) -> None:
    _assert_same(CORPUS[name])


@pytest.mark.filterwarnings("ignore::SyntaxWarning", "ignore::DeprecationWarning")
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_grammar())
def test_both_paths_agree_on_generated_programs(program: str) -> None:
    _assert_same(program)
