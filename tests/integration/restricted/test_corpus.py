"""The agent-code corpus runs unchanged in restricted mode: same output as plain Python."""

from __future__ import annotations

import contextlib
import io
import os
from collections import Counter
from pathlib import Path

import pytest
from restricted_corpus import CORPUS, REFUSED, Snippet

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.restricted import RestrictedBackend
from safeexec.model.values import ExecRequest, ExecStatus, Limits
from safeexec.policy.loader import load_policy
from safeexec.restricted import OperationBudget, RestrictedExecutor
from safeexec.sandbox.python_executor import PythonExecutor

# The default policy pack's import allowlist.
IMPORTS = load_policy("default").imports.allow

Observed = tuple[str, str]


def run_plain(snippet: Snippet, workdir: Path) -> list[Observed]:
    executor = PythonExecutor()
    out: list[Observed] = []
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        for i, cell in enumerate(snippet.cells):
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                try:
                    shown = executor.execute(cell, filename=f"<cell-{i}>")
                except Exception as exc:
                    shown = f"{type(exc).__name__}: {exc}"
            out.append((buffer.getvalue(), str(shown)))
    finally:
        os.chdir(cwd)
    return out


def run_restricted(snippet: Snippet, workdir: Path, *, counting: bool) -> list[Observed]:
    executor = RestrictedExecutor(imports=IMPORTS, workdir=workdir, count_operations=counting)
    out: list[Observed] = []
    for i, cell in enumerate(snippet.cells):
        buffer = io.StringIO()
        executor.set_sink(buffer)
        budget = OperationBudget(10**9) if counting else None
        try:
            shown = executor.execute(cell, filename=f"<cell-{i}>", budget=budget)
        except Exception as exc:
            shown = f"{type(exc).__name__}: {exc}"
        out.append((buffer.getvalue(), str(shown)))
    return out


@pytest.mark.parametrize("counting", [False, True], ids=["worker-runtime", "in-process-runtime"])
@pytest.mark.parametrize("snippet", CORPUS, ids=[s.name for s in CORPUS])
def test_snippet_runs_unchanged(snippet: Snippet, counting: bool, tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "restricted").mkdir()
    expected = run_plain(snippet, tmp_path / "plain")
    assert run_restricted(snippet, tmp_path / "restricted", counting=counting) == expected


def test_corpus_is_large_and_covers_every_category() -> None:
    categories = Counter(s.category for s in CORPUS)
    assert len(CORPUS) >= 50
    assert set(categories) == {
        "math", "text", "data", "files", "algorithms", "classes", "errors", "state"
    }  # fmt: skip
    assert all(len(s.cells) == 2 for s in CORPUS if s.category == "state")


@pytest.mark.parametrize(("reason", "code"), REFUSED, ids=[r for r, _ in REFUSED])
def test_refusals_are_the_policy_on_purpose(reason: str, code: str, tmp_path: Path) -> None:
    executor = RestrictedExecutor(imports=IMPORTS, workdir=tmp_path)
    with pytest.raises(Exception) as raised:
        executor.execute(code, filename="<cell>")
    assert type(raised.value).__name__ in {
        "SyntaxError", "ImportError", "GuardError", "PermissionError", "NameError", "AttributeError"
    }, reason  # fmt: skip


@pytest.fixture(scope="module", params=["in-worker", "in-process"])
def backend(request: pytest.FixtureRequest) -> RestrictedBackend:
    return RestrictedBackend(in_process=request.param == "in-process")


@pytest.mark.parametrize("snippet", CORPUS, ids=[s.name for s in CORPUS])
def test_snippet_runs_unchanged_through_the_backend(
    snippet: Snippet, backend: RestrictedBackend, tmp_path: Path
) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "work").mkdir()
    expected = run_plain(snippet, tmp_path / "plain")
    blobs = BlobStore(tmp_path / "blobs")
    session = backend.open(
        SessionSpec(workdir=tmp_path / "work", limits=Limits(), blobs=blobs, imports=IMPORTS)
    )
    try:
        for cell, (stdout, shown) in zip(snippet.cells, expected, strict=True):
            result = session.run(ExecRequest(action_id="a", code=cell))
            if result.status is ExecStatus.OK:
                printed = stdout + ("" if shown == "None" else shown + "\n")
                assert blobs.get(result.stdout).decode() == printed
            else:
                assert result.status is ExecStatus.ERROR
                assert result.message == shown
    finally:
        session.close()
