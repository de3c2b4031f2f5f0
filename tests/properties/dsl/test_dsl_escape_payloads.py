"""Every escape payload of the suite, run in the dsl mode, is refused before anything runs: the
Python ones at their first non-DSL construct (SX700), the rest by names or types (SX701/SX702)."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings

from safeexec.gate import check
from safeexec.model.values import Action, Verdict
from safeexec.policy.loader import load_policy

ESCAPES = Path(__file__).resolve().parents[2] / "escapes"
POLICY = load_policy("default")
_MARKERS = ("import", "open(", "__", "exec", "eval", "socket", "os.", "while", "def ")


def _payloads() -> list[tuple[str, str]]:
    """String constants in the escape tests that are Python programs doing something risky."""
    found: list[tuple[str, str]] = []
    for path in sorted(ESCAPES.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            text = node.value
            if len(text) < 12 or not any(m in text for m in _MARKERS):
                continue
            try:
                ast.parse(text)
            except SyntaxError:
                continue
            found.append((f"{path.stem}:{node.lineno}", text))
    return found


PAYLOADS = _payloads()


def test_there_are_payloads_to_refuse() -> None:
    assert len(PAYLOADS) >= 40


def test_every_escape_payload_is_refused_statically_in_the_dsl_mode() -> None:
    rules: dict[str, int] = {}
    for where, code in PAYLOADS:
        gate = check(Action.create(code), POLICY, backend="dsl", tools=())
        assert gate.decision.verdict is Verdict.DENY, where
        first = gate.decision.findings[0]
        assert first.rule in ("SX700", "SX701", "SX702", "SX706"), (where, first)
        rules[first.rule] = rules.get(first.rule, 0) + 1
    assert rules.get("SX700", 0) >= len(PAYLOADS) * 3 // 4, rules


def test_a_python_module_is_refused_at_its_first_import() -> None:
    source = (ESCAPES / "test_read_etc_shadow.py").read_text(encoding="utf-8")
    gate = check(Action.create(source), POLICY, backend="dsl", tools=())
    (finding,) = gate.decision.findings
    first_import = next(
        i for i, line in enumerate(source.splitlines(), 1) if line.startswith(("import", "from"))
    )
    assert finding.rule == "SX700" and finding.span is not None
    assert finding.span.start_line <= first_import


# hypothesmith compiles what it generates, so CPython's compiler warns about some of it
# (``0()``: "'int' object is not callable"); the gate itself must stay silent, checked below.
@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_grammar())
def test_generated_python_is_refused_or_checked_never_crashes(source: str) -> None:
    with warnings.catch_warnings(record=True) as raised:
        warnings.simplefilter("always")
        gate = check(Action.create(source), POLICY, backend="dsl", tools=())
    assert not raised, [str(w.message) for w in raised]
    assert not [f for f in gate.decision.findings if f.rule.startswith("SX9")]
    if gate.dsl is None or gate.dsl.program is None:
        (finding,) = gate.decision.findings
        assert finding.rule in ("SX700", "SX706")
