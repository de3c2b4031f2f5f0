"""What went wrong in a turn is classified honestly: a syntax error, no code, an unknown tool and
a malformed call are the model's mistakes; only policy and guard decisions are security refusals.
Each class ends a run of failed turns under its own name, and every budget ends a run as itself."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from safeexec.backends.fake import FakeBackend, FakeReply
from safeexec.harness import (
    EndReason,
    Reply,
    RunOptions,
    ScriptedModel,
    TokenUsage,
    ToolCall,
    load_suite,
    run_task,
    summarize,
)
from safeexec.harness.effects import turn_fault
from safeexec.harness.formats import ActionKind, ParsedAction, TurnFault
from safeexec.model.values import (
    ExecStatus,
    ExecutionEvent,
    GuardDenied,
    LimitHit,
    SyscallKilled,
)
from safeexec.policy.loader import load_policy
from safeexec.policy.schema import BackendsConfig
from safeexec.session.session import Session

SUITE = load_suite(Path(__file__).resolve().parent / "fixture_suite")
TASK = SUITE.tasks[0]  # calc-sum: add(a, b), then submit


def _call(name: str, arguments: str) -> Reply:
    return Reply(tool_calls=(ToolCall(id="c1", name=name, arguments=arguments),))


CASES = [
    ("code", Reply(text="```python\ndef f(:\n    pass\n```"), EndReason.SYNTAX_ERROR),
    ("code", Reply(text="I would add the two numbers."), EndReason.NO_CODE),
    ("code", Reply(text="```python\nadd(a='x', b=[1])\n```"), EndReason.MALFORMED_CALL),
    ("code", Reply(text="```python\nimport os\nos.system('id')\n```"), EndReason.POLICY_REFUSAL),
    ("json", Reply(text="I will call add."), EndReason.NO_CODE),
    ("json", _call("delete_everything", "{}"), EndReason.UNKNOWN_TOOL),
    ("json", _call("add", "{a: 1"), EndReason.MALFORMED_CALL),
    ("json", _call("add", '{"a": "one"}'), EndReason.MALFORMED_CALL),
    ("text", Reply(text="Let me think."), EndReason.NO_CODE),
    ("text", Reply(text="Action: remove_all()"), EndReason.UNKNOWN_TOOL),
    ("text", Reply(text="Action: add(a=1, b=)"), EndReason.MALFORMED_CALL),
]


@pytest.mark.parametrize(("fmt", "reply", "end"), CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_each_kind_of_failed_turn_ends_the_run_under_its_own_name(
    tmp_path: Path, fmt: str, reply: Reply, end: EndReason
) -> None:
    model = ScriptedModel(lambda messages, key, rng: reply)
    options = RunOptions(format=fmt, mode="restricted", state_dir=tmp_path)
    result = run_task(SUITE, TASK, model, options)
    assert result.end_reason is end and result.turns == 3
    assert result.faults == {end.value: 3}
    summary = summarize([result])
    security = end in (EndReason.POLICY_REFUSAL, EndReason.GUARD_REFUSAL)
    assert summary["security_refusals"] == (3 if security else 0)
    assert result.invalid_actions == (0 if security else 3)
    assert bool(result.refusals) is security  # a model's mistake is never a refusal


def test_a_write_the_task_did_not_authorize_is_a_policy_refusal(tmp_path: Path) -> None:
    task = next(t for t in SUITE.tasks if t.id == "notes-sender")  # reads only; add_note granted
    model = ScriptedModel(lambda m, k, r: _call("add_note", '{"text": "not asked for"}'))
    options = RunOptions(format="json", mode="restricted", state_dir=tmp_path)
    result = run_task(SUITE, task, model, options)
    assert result.end_reason is EndReason.POLICY_REFUSAL
    assert result.faults == {"policy_refusal": 3} and result.refusals["capability"]
    assert summarize([result])["security_refusals"] == 3


def _fake_session(tmp_path: Path, *events: ExecutionEvent) -> Session:
    policy = load_policy("default")
    policy = dataclasses.replace(policy, backends=BackendsConfig(allowed=("fake",), default="fake"))
    backend = FakeBackend(lambda request: FakeReply(status=ExecStatus.ERROR, events=events))
    return Session(policy=policy, state_dir=tmp_path, backends={"fake": backend})


@pytest.mark.parametrize(
    ("event", "fault"),
    [
        (GuardDenied(guard="getattr", detail="_private"), TurnFault.GUARD_REFUSAL),
        (SyscallKilled(signal=31, syscall="ptrace"), TurnFault.GUARD_REFUSAL),
        (LimitHit(limit="memory_bytes", value=1.0), None),  # a resource limit, not a refusal
    ],
)
def test_what_the_runtime_did_is_classified_from_the_events(
    tmp_path: Path, event: ExecutionEvent, fault: TurnFault | None
) -> None:
    code = "```python\nprint(1)\n```"
    with _fake_session(tmp_path, event) as session:
        outcome = session.run(code)
    parsed = ParsedAction(kind=ActionKind.CODE, code=code)
    assert turn_fault(parsed, outcome) is fault


def test_a_spent_token_budget_ends_the_run_as_itself(tmp_path: Path) -> None:
    usage = TokenUsage(prompt_tokens=300, completion_tokens=20)
    model = ScriptedModel(lambda m, k, r: Reply(text="Action: add(a=1, b=2)", usage=usage))
    options = RunOptions(format="text", mode="restricted", state_dir=tmp_path, token_budget=1000)
    result = run_task(SUITE, TASK, model, options)
    assert result.end_reason is EndReason.TOKEN_BUDGET
    assert result.turns == 4 and result.tokens == {"prompt": 1200, "completion": 80}


def test_max_tokens_reaches_the_model(tmp_path: Path) -> None:
    asked: list[int | None] = []

    class Asking(ScriptedModel):
        def complete(self, messages, *, tools=(), key, max_tokens=None):  # type: ignore[no-untyped-def]
            asked.append(max_tokens)
            return Reply(text="Answer: 6.5")

    options = RunOptions(format="text", mode="restricted", state_dir=tmp_path, max_tokens=77)
    result = run_task(SUITE, TASK, Asking(lambda m, k, r: Reply()), options)
    assert result.success and asked == [77]


def test_a_spent_cpu_budget_ends_the_run_as_itself(tmp_path: Path) -> None:
    busy = "```python\nt = 0\nfor i in range(3000000):\n    t += i\nprint(t)\n```"
    model = ScriptedModel(lambda m, k, r: Reply(text=busy))
    options = RunOptions(format="code", mode="restricted", state_dir=tmp_path, cpu_seconds=0.05)
    result = run_task(SUITE, TASK, model, options)
    assert result.end_reason is EndReason.CPU_BUDGET and result.turns == 1
