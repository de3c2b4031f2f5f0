"""The examples in dsl/examples/ against their golden plans and results (deterministic tools).

``SAFEEXEC_UPDATE_GOLDENS=1`` rewrites the golden files instead of comparing (review the diff).
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest
from dsl_support import EXAMPLES, front, run

from safeexec.dsl.compiler import compile_program
from safeexec.model.values import ExecStatus

PROGRAMS = sorted(EXAMPLES.glob("*.dsl"))
UPDATE = os.environ.get("SAFEEXEC_UPDATE_GOLDENS") == "1"
DOMAINS = ("shopping", "travel", "finance", "decoding", "web")


def _golden(path: Path, actual: str) -> str:
    if UPDATE:
        path.write_text(actual, encoding="utf-8")
    return path.read_text(encoding="utf-8")


def test_there_are_the_examples_the_benchmark_needs() -> None:
    names = [p.stem for p in PROGRAMS]
    assert "shopping" in names
    assert len([n for n in names if n != "shopping"]) >= 10
    assert {n.split("_")[0] for n in names} == set(DOMAINS)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_example_plan_and_result_match_the_goldens(program: Path, tmp_path: Path) -> None:
    source = program.read_text(encoding="utf-8")
    checked = front(source)
    assert checked.accepted and checked.plan is not None, checked.findings
    assert checked.checked is not None
    module = compile_program(checked.checked)  # well-formed: round-trips through Python text
    assert ast.dump(ast.parse(ast.unparse(module))) == ast.dump(module)
    plan = json.dumps(checked.plan.to_json(), indent=2, ensure_ascii=False) + "\n"
    assert plan == _golden(program.with_suffix(".plan.json"), plan)
    ran = run(source, tmp_path)
    assert ran.result.status is ExecStatus.OK, ran.stderr
    assert ran.stdout == _golden(program.with_suffix(".result.txt"), ran.stdout)
    # Observed within the plan: calls per tool and in total.
    observed: dict[str, int] = {}
    for event in ran.result.events:
        if event.kind == "tool_called":
            observed[event.tool] = observed.get(event.tool, 0) + 1
    planned = {t.name: t.max_calls for t in checked.plan.tools}
    assert all(observed[name] <= planned[name] for name in observed)
