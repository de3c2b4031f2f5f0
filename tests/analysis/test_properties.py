"""Property tests: on generated programs the check never raises, terminates and is deterministic.

Generated code is only parsed and checked, never executed.
"""

from __future__ import annotations

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safeexec.gate import check
from safeexec.model import Action
from safeexec.policy.loader import load_policy

# Generated programs are full of `1()`-style code CPython warns about while compiling.
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")

DEFAULT = load_policy("default")
STRICT = load_policy("strict")


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(code=hypothesmith.from_grammar())
def test_check_never_raises_and_is_deterministic_on_generated_programs(code: str) -> None:
    action = Action.create(code, action_id="prop")
    first = check(action, DEFAULT)
    second = check(action, DEFAULT)
    assert first.decision.to_json() == second.decision.to_json()
    assert first.decision.policy_digest == second.decision.policy_digest == DEFAULT.digest


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(code=hypothesmith.from_node())
def test_check_never_raises_on_generated_syntax_trees(code: str) -> None:
    result = check(Action.create(code, action_id="prop"), STRICT)
    assert result.decision.policy_id == "strict"


@settings(max_examples=100, deadline=None)
@given(code=st.text(max_size=300))
def test_check_never_raises_on_arbitrary_text(code: str) -> None:
    result = check(Action.create(code, action_id="prop"), DEFAULT)
    if result.parsed is None:
        assert result.decision.verdict.value == "deny"


def test_pathological_inputs_fail_closed_or_pass_without_crashing() -> None:
    programs = [
        "x = " + " + ".join(["1"] * 20000),
        "x = " + "(" * 150 + "1" + ")" * 150,
        "def f():\n"
        + "".join("    " * i + "if x:\n" for i in range(1, 90))
        + "    " * 90
        + "pass\n",
        "s = '" + "a" * 200000 + "'",
        "\n".join(f"import json as j{i}" for i in range(3000)),
        "x = [" + ", ".join(str(i) for i in range(50000)) + "]",
    ]
    for code in programs:
        result = check(Action.create(code, action_id="patho"), DEFAULT)
        assert result.decision.verdict.value in ("allow", "deny")
