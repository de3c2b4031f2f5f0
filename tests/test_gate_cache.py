"""gate.check's decision cache: a re-check of the same inputs is a hit; changing any input the
decision depends on is a miss, or (budget, backend) is still reflected in the decision."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import safeexec.gate as gate_module
from safeexec.backends.fake import FakeBackend, FakeReply
from safeexec.gate import check, check_cache_statistics
from safeexec.model.values import Action, Budget, Verdict
from safeexec.policy.loader import load_policy, policy_digest
from safeexec.session.session import Session

DEFAULT = load_policy("default")
CODE = "import json\nprint(json.dumps({'a': 1}))\n"


@pytest.fixture(autouse=True)
def _empty_cache() -> None:
    gate_module._CHECKED.clear()


def _hits() -> int:
    return check_cache_statistics().hits


def test_a_recheck_of_the_same_code_and_policy_is_a_hit_with_the_same_decision() -> None:
    first = check(CODE, DEFAULT)
    again = check(CODE, DEFAULT)
    assert _hits() == 1
    assert again.decision == first.decision
    assert again.checked_code == first.checked_code


def test_a_hit_answers_for_the_action_it_was_asked_about() -> None:
    check(Action.create(CODE, action_id="first"), DEFAULT)
    later = Action.create(CODE, action_id="later")
    result = check(later, DEFAULT)
    assert _hits() == 1
    assert result.action is later and result.parsed is not None and result.parsed.action is later


def test_other_code_misses() -> None:
    check(CODE, DEFAULT)
    assert check("import os\nos.system('x')\n", DEFAULT).decision.verdict is Verdict.DENY
    assert _hits() == 0


def test_a_code_digest_the_action_lies_about_is_not_trusted() -> None:
    check(CODE, DEFAULT)
    forged = replace(
        Action.create("import os\nos.system('x')\n"), code_sha256=Action.create(CODE).code_sha256
    )
    assert check(forged, DEFAULT).decision.verdict is Verdict.DENY
    assert _hits() == 0


def test_another_policy_misses() -> None:
    check(CODE, DEFAULT)
    strict = load_policy("strict")
    check(CODE, strict)
    assert _hits() == 0


def test_an_equal_policy_object_with_the_same_digest_but_other_content_misses() -> None:
    # A policy replaced in code keeps the digest it was given: the cache must not trust it.
    check("import json\n", DEFAULT)
    narrowed = replace(DEFAULT, imports=replace(DEFAULT.imports, allow=()))
    assert narrowed.digest == DEFAULT.digest
    assert check("import json\n", narrowed).decision.verdict is Verdict.DENY
    assert _hits() == 0


def test_a_reloaded_policy_with_a_recomputed_digest_misses() -> None:
    check(CODE, DEFAULT)
    widened = replace(
        DEFAULT, imports=replace(DEFAULT.imports, allow=(*DEFAULT.imports.allow, "x"))
    )
    widened = replace(widened, digest=policy_digest(widened))
    check(CODE, widened)
    assert _hits() == 0


def test_another_mode_misses() -> None:
    code = "import subprocess\n"  # native may allow what restricted cannot import
    native = check(code, DEFAULT, backend="native")
    restricted = check(code, DEFAULT, backend="restricted")
    assert _hits() == 0
    assert restricted.decision.backend == "restricted" and native.decision.backend == "native"


def test_other_tool_names_miss() -> None:
    code = "for i in range(10):\n    fetch_url(url='x')\n"
    counted = check(code, DEFAULT, tool_names=("fetch_url",))
    uncounted = check(code, DEFAULT, tool_names=())
    assert _hits() == 0
    assert counted.estimate is not None and uncounted.estimate is not None
    assert counted.estimate.tool_calls != uncounted.estimate.tool_calls


def test_the_budget_is_decided_on_every_call_even_on_a_hit() -> None:
    code = "for i in range(10):\n    fetch_url(url='x')\n"
    assert check(code, DEFAULT).decision.verdict is Verdict.ALLOW
    tight = Budget(steps_left=5, cpu_seconds_left=10.0, tool_calls_left=3)
    result = check(code, DEFAULT, budget=tight)
    assert _hits() == 1
    assert "SX510" in {f.rule for f in result.findings}


def test_a_crashed_check_is_not_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(*args: object, **kwargs: object) -> object:
        raise RuntimeError("transient")

    monkeypatch.setattr(gate_module, "scan", crash)
    assert check(CODE, DEFAULT).findings[0].rule == "SX900"
    monkeypatch.undo()
    assert check(CODE, DEFAULT).decision.verdict is Verdict.ALLOW
    assert _hits() == 0


def test_parse_failures_are_cached_too() -> None:
    first = check("def (:", DEFAULT)
    again = check("def (:", DEFAULT)
    assert _hits() == 1 and again.findings == first.findings and again.parsed is None


def test_a_session_rerunning_the_same_code_hits_the_cache(tmp_path: Path) -> None:
    # Session.run passes its own policy object, mode and tool names on every step: none of them
    # may change between steps, or an agent's resubmitted code would be checked cold each time.
    policy = replace(DEFAULT, backends=replace(DEFAULT.backends, allowed=("fake",), default="fake"))
    backend = FakeBackend(lambda request: FakeReply(stdout="ok\n"))
    with Session(policy=policy, state_dir=tmp_path / "state", backends={"fake": backend}) as s:
        s.run(f"```python\n{CODE}```")
        assert _hits() == 0
        second = s.run(f"```python\n{CODE}```")
    assert _hits() == 1
    assert second.decision.allowed
    assert len(backend.calls) == 2
