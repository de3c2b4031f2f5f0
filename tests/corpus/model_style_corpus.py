"""Our own corpus of model-style snippets: load the cells and run them through a real Session.

Each file under ``model_style/`` holds cells separated by ``# %% <name>`` lines; a cell asserts
its own result, so "it ran" means status ``ok``. Cells of ``state.py`` are the steps of one agent
session and run in order in one session; every other cell runs in a fresh session. The test
(``test_model_style_corpus.py``) and the benchmark (``benchmarks/bench_policy_fit.py``) share this
module, so the rate the benchmark prints is the rate the test holds.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from safeexec import Session

CORPUS_DIR = Path(__file__).parent / "model_style"
EXPECTED_REFUSALS = Path(__file__).parent / "expected_refusals.toml"
# Files whose cells are the steps of one session (they build on each other's state).
SESSION_FILES = frozenset({"state"})
_CELL = re.compile(r"^# %% (?P<name>[a-z0-9-]+)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True, slots=True, kw_only=True)
class Snippet:
    """One cell: ``id`` is ``<file>/<name>``; ``group`` names the session it shares, if any."""

    id: str
    code: str
    group: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class SnippetRun:
    """What happened to one snippet: ``ran`` is True when it was allowed and finished ``ok``."""

    id: str
    verdict: str
    status: str | None
    rules: tuple[str, ...]
    detail: str

    @property
    def ran(self) -> bool:
        return self.verdict == "allow" and self.status == "ok"


def load_corpus() -> tuple[Snippet, ...]:
    """Every cell of every corpus file, in file then cell order."""
    snippets: list[Snippet] = []
    for path in sorted(CORPUS_DIR.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        marks = list(_CELL.finditer(text))
        for index, mark in enumerate(marks):
            end = marks[index + 1].start() if index + 1 < len(marks) else len(text)
            group = path.stem if path.stem in SESSION_FILES else None
            code = text[mark.end() : end].strip("\n") + "\n"
            snippets.append(Snippet(id=f"{path.stem}/{mark['name']}", code=code, group=group))
    return tuple(snippets)


def expected_refusals(pack: str, mode: str) -> dict[str, str]:
    """Snippet id → the documented reason it is refused under ``pack`` in ``mode``."""
    data = tomllib.loads(EXPECTED_REFUSALS.read_text(encoding="utf-8"))
    table = data.get(pack, {}).get(mode, {})
    return {str(key): str(value) for key, value in table.items()}


def _reply(code: str) -> str:
    return f"```python\n{code}```"


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1][:200] if lines else ""


def run_snippets(
    snippets: tuple[Snippet, ...], *, pack: str, mode: str, workdir_root: Path
) -> Iterator[SnippetRun]:
    """Run ``snippets`` under ``pack`` in ``mode``, one session per snippet or per group."""
    batches: list[list[Snippet]] = []
    groups: dict[str, list[Snippet]] = {}
    for snippet in snippets:
        if snippet.group is None:
            batches.append([snippet])
        elif snippet.group in groups:
            groups[snippet.group].append(snippet)
        else:
            groups[snippet.group] = [snippet]
            batches.append(groups[snippet.group])
    for number, batch in enumerate(batches):
        workdir = workdir_root / f"s{number}"
        workdir.mkdir(parents=True)
        with Session(
            policy=pack, mode=mode, workdir=workdir, state_dir=workdir_root / f"state{number}"
        ) as session:
            for snippet in batch:
                outcome = session.run(_reply(snippet.code))
                result = outcome.result
                yield SnippetRun(
                    id=snippet.id,
                    verdict=str(outcome.decision.verdict),
                    status=None if result is None else str(result.status),
                    rules=tuple(f.rule for f in outcome.decision.findings),
                    detail=_last_line(outcome.observation.text),
                )
