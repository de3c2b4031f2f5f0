"""The gate's fast paths change nothing it decides: same decision with and without them.

Two fast paths sit on ``check``'s cold path: libcst's cross-check runs only on text the parsers
may read differently (``safeexec/parse/__init__.py``), and the tree walks (the parse's size
measure, the estimator, the scanner) read only the fields that can hold nodes
(``safeexec/parse/fields.py``). The reference here turns both off (the cross-check on every
text, every walk reading every field) and must reach the same decision, findings, estimate and
checked text on every corpus text the repository holds, under each shipped pack and mode.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import safeexec.analysis.estimate as estimate_module
import safeexec.analysis.scanner as scanner_module
import safeexec.parse as parse_module
from safeexec.analysis import scan
from safeexec.analysis.estimate import estimate
from safeexec.decide import decide
from safeexec.gate import GateResult, check, clear_check_cache, fresh_budget
from safeexec.model.values import Action, Decision, Estimate, Finding
from safeexec.parse import Parsed, ParseFailure, parse
from safeexec.policy.loader import load_policy
from safeexec.policy.schema import Policy

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "corpus"))
from python_texts import python_corpus

CORPUS = python_corpus()
PACKS = {name: load_policy(name) for name in ("default", "strict", "data-analysis")}
CASES = [
    (name, mode)
    for name, policy in PACKS.items()
    for mode in policy.backends.allowed
    if mode not in ("dsl", "restricted-inprocess")
]


class _EveryField(dict[type, tuple[str, ...]]):
    """The slow walk: every field of a class (``ctx`` too unless left out)."""

    def __init__(self, *, with_context: bool) -> None:
        super().__init__()
        self._with_context = with_context

    def __missing__(self, cls: type) -> tuple[str, ...]:
        fields: tuple[str, ...] = cls._fields  # type: ignore[attr-defined]
        found = tuple(f for f in fields if self._with_context or f != "ctx")
        self[cls] = found
        return found


def _walk_with(patch: pytest.MonkeyPatch, table: type[_EveryField]) -> None:
    """Make every tree walk of the cold path read its fields from ``table``."""
    patch.setattr(parse_module, "CHILD_FIELDS", table(with_context=True))
    patch.setattr(estimate_module, "CHILD_FIELDS", table(with_context=True))
    patch.setattr(scanner_module, "CHILD_FIELDS_NO_CONTEXT", table(with_context=False))


def _reference(
    outcome: Parsed | ParseFailure, policy: Policy, mode: str
) -> tuple[Decision, Estimate | None, str | None]:
    """``check`` of a parse without the fast paths, with nothing cached."""
    if isinstance(outcome, ParseFailure):
        findings: tuple[Finding, ...] = (outcome.finding,)
        estimated, checked = None, None
    else:
        tools = tuple(c.tool for c in policy.capabilities if c.grantable)
        estimated = estimate(outcome, tool_names=tools)
        findings = scan(outcome, policy, estimate=estimated, mode=mode)
        checked = outcome.code
    decision = decide(
        findings=findings,
        estimate=estimated,
        policy=policy,
        budget=fresh_budget(policy),
        backend=mode,
    )
    return decision, estimated, checked


def _slow_parse(code: str) -> Parsed | ParseFailure:
    """The parse with libcst's cross-check on every text."""
    return parse(Action.create(code), always_cross_check=True)


def _fast(code: str, policy: Policy, mode: str) -> GateResult:
    clear_check_cache()
    return check(code, policy, backend=mode)


def test_the_cases_cover_every_pack_and_a_sandboxed_mode() -> None:
    assert {name for name, _ in CASES} == set(PACKS)
    assert ("default", "native") in CASES and ("default", "restricted") in CASES


@pytest.mark.filterwarnings("ignore::SyntaxWarning", "ignore::DeprecationWarning")
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_the_fast_paths_decide_as_the_reference_on_the_corpus(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = CORPUS[name]
    fast = {case: _fast(code, PACKS[case[0]], case[1]) for case in CASES}
    with monkeypatch.context() as patch:
        _walk_with(patch, _EveryField)
        outcome = _slow_parse(code)
        slow = {case: _reference(outcome, PACKS[case[0]], case[1]) for case in CASES}
    for case in CASES:
        decision, estimated, checked = slow[case]
        assert fast[case].decision == decision, case
        assert fast[case].estimate == estimated, case
        assert fast[case].checked_code == checked, case


class _NoCallArguments(_EveryField):
    """A broken walk: it never reads a call's arguments."""

    def __missing__(self, cls: type) -> tuple[str, ...]:
        found = tuple(f for f in super().__missing__(cls) if not (cls is ast.Call and f == "args"))
        self[cls] = found
        return found


def test_a_walk_that_skips_a_node_field_decides_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    # The differential can fail: a table that leaves out a field holding nodes loses findings.
    code = "print(eval('1'))\n"
    policy = PACKS["default"]
    assert not _fast(code, policy, "native").decision.allowed
    _walk_with(monkeypatch, _NoCallArguments)
    assert _reference(_slow_parse(code), policy, "native")[0].allowed


def test_the_reference_walk_reads_fields_the_fast_walk_skips() -> None:
    # The reference differs in mechanism, or the differential above would prove nothing.
    from safeexec.parse.fields import CHILD_FIELDS

    every = _EveryField(with_context=True)
    assert every[ast.Name] == ("id", "ctx") and CHILD_FIELDS[ast.Name] == ("ctx",)
    assert every[ast.Constant] != CHILD_FIELDS[ast.Constant] == ()
