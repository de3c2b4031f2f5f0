"""Property tests: on generated programs the check never raises, terminates, is deterministic and
never fails closed (no SX900): a crashed check is a deny, so "it did not raise" alone would pass
even if every scan crashed. A test below proves the properties fail when the scanner crashes.

Generated code is only parsed and checked, never executed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from functools import partial
from unittest import mock

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import safeexec.analysis.scanner as scanner_module
import safeexec.gate as gate_module
from safeexec.analysis import scan
from safeexec.gate import GateResult, check
from safeexec.model.values import Action
from safeexec.policy.loader import load_policy
from safeexec.policy.schema import Policy

# Generated programs are full of `1()`-style code CPython warns about while compiling.
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")

DEFAULT = load_policy("default")
STRICT = load_policy("strict")
# Generous budgets so a loaded machine does not turn a slow example into a failure: hypothesis's
# per-example deadline, and the scanner's own time budget (past it the scan denies with SX900).
DEADLINE = timedelta(seconds=60)
SCAN_BUDGET_SECONDS = 60.0


@contextmanager
def _generous_scan_budget() -> Iterator[None]:
    with mock.patch.object(
        gate_module, "scan", partial(scan, time_budget_seconds=SCAN_BUDGET_SECONDS)
    ):
        yield


def _checked(code: str, policy: Policy) -> GateResult:
    """``check`` on ``code``, asserting the engine itself did not fail closed."""
    with _generous_scan_budget():
        result = check(Action.create(code, action_id="prop"), policy)
    crashed = [f.message for f in result.findings if f.rule == "SX900"]
    assert not crashed, crashed
    return result


@settings(max_examples=60, deadline=DEADLINE, suppress_health_check=list(HealthCheck))
@given(code=hypothesmith.from_grammar())
def test_check_never_raises_and_is_deterministic_on_generated_programs(code: str) -> None:
    first = _checked(code, DEFAULT)
    second = _checked(code, DEFAULT)
    assert first.decision.to_json() == second.decision.to_json()
    assert first.decision.policy_digest == second.decision.policy_digest == DEFAULT.digest


@settings(max_examples=20, deadline=DEADLINE, suppress_health_check=list(HealthCheck))
@given(code=hypothesmith.from_node())
def test_check_never_raises_on_generated_syntax_trees(code: str) -> None:
    result = _checked(code, STRICT)
    assert result.decision.policy_id == "strict"


@settings(max_examples=100, deadline=DEADLINE)
@given(code=st.text(max_size=300))
def test_check_never_raises_on_arbitrary_text(code: str) -> None:
    result = _checked(code, DEFAULT)
    if result.parsed is None:
        assert result.decision.verdict.value == "deny"


PROPERTIES = [
    test_check_never_raises_and_is_deterministic_on_generated_programs,
    test_check_never_raises_on_generated_syntax_trees,
    test_check_never_raises_on_arbitrary_text,
]


@pytest.fixture
def crashing_scanner(monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(self: object, estimate: object) -> object:
        raise RuntimeError("scanner forced to crash")

    monkeypatch.setattr(scanner_module._Scanner, "run", crash)
    gate_module._CHECKED.clear()  # a decision cached before the crash was forced would hide it


@pytest.mark.usefixtures("crashing_scanner")
@pytest.mark.parametrize("prop", PROPERTIES, ids=lambda p: p.__name__)
def test_each_property_fails_on_a_program_when_the_scanner_crashes(
    prop: Callable[[], None],
) -> None:
    # The property body itself, on one program (a whole hypothesis run would also shrink).
    inner = prop.hypothesis.inner_test  # type: ignore[attr-defined]
    with pytest.raises(AssertionError, match="the scanner crashed"):
        inner(code="total = sum(range(10))\n")


@pytest.mark.usefixtures("crashing_scanner")
def test_a_whole_property_run_fails_when_the_scanner_crashes() -> None:
    with pytest.raises(AssertionError, match="the scanner crashed"):
        test_check_never_raises_on_arbitrary_text()


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
    verdicts = [_checked(code, DEFAULT).decision.verdict.value for code in programs]
    assert verdicts == ["deny", "allow", "allow", "allow", "allow", "allow"]
