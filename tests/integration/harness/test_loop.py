"""The loop end to end: the same suites in every format with scripted agents."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from safeexec.audit.blobs import BlobStore
from safeexec.capabilities.gateway import ApprovalRequest
from safeexec.harness import (
    EndReason,
    ReplayModel,
    Reply,
    RunOptions,
    ScriptedModel,
    load_suite,
    make_agent,
    reference_trace,
    run_suite,
    run_task,
)

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "agent_suite"
FIXTURE = Path(__file__).resolve().parents[2] / "harness" / "fixture_suite"
MODE = "restricted"


@pytest.mark.parametrize("suite_dir", [EXAMPLE, FIXTURE], ids=["example", "fixture"])
@pytest.mark.parametrize("fmt", ["code", "json", "text"])
def test_the_oracle_answers_every_task_in_every_format(
    suite_dir: Path, fmt: str, tmp_path: Path
) -> None:
    suite = load_suite(suite_dir)
    options = RunOptions(format=fmt, mode=MODE, state_dir=tmp_path)
    run = run_suite(suite, "oracle", options)
    assert [r.task for r in run.results] == [t.id for t in suite.tasks]
    for result in run.results:
        assert result.success, result
        assert result.end_reason is EndReason.ANSWERED
        assert result.unauthorized_effects == {"state": [], "secrets_in_arguments": []}
        if fmt == "code":
            assert result.turns == 1
        else:  # one tool call per turn, then the answer
            assert result.turns == result.tool_calls + 1
    assert run.summary["succeeded"] == len(suite.tasks)


def test_the_oracle_code_action_runs_in_the_native_mode(tmp_path: Path) -> None:
    suite = load_suite(EXAMPLE)
    options = RunOptions(format="code", mode="native", state_dir=tmp_path)
    run = run_suite(suite, "oracle", options, task_ids=["shop-order", "mail-senders"])
    assert [r.success for r in run.results] == [True, True]


def test_every_turn_is_recorded_and_linked_to_its_audit_event(tmp_path: Path) -> None:
    suite = load_suite(FIXTURE)
    options = RunOptions(format="json", mode=MODE, state_dir=tmp_path)
    run_suite(suite, "oracle", options, task_ids=["calc-chain"])
    turns = [json.loads(line) for line in (tmp_path / "turns.jsonl").read_text().splitlines()]
    audit = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [t["turn"] for t in turns] == [0, 1, 2]
    assert [t["action"]["tool"] for t in turns] == ["add", "add", "submit"]
    ids = {e["action_id"]: e for e in audit}
    for turn in turns:
        event = ids[turn["action_id"]]
        assert event["backend"] == "tool" and event["language"] == "tool_call"
        assert set(turn["time_s"]) == {"model", "gate", "execution", "tool"}
        reply = json.loads(BlobStore(tmp_path / "blobs").get(turn["reply"]))
        assert reply["tool_calls"][0]["name"] == turn["action"]["tool"]


def test_a_suite_written_to_the_format_keeps_its_unknown_fields() -> None:
    suite = load_suite(FIXTURE)
    tasks = {t.id: t for t in suite.tasks}
    assert tasks["calc-sum"].extra == {"difficulty": "easy"}
    assert tasks["notes-add"].extra == {"owner": {"team": "somebody else"}}
    assert suite.scenarios == ("calc", "notes")


def _gullible_run(tmp_path: Path, approver: object, fmt: str) -> dict[str, object]:
    suite = load_suite(FIXTURE)
    options = RunOptions(
        format=fmt,
        mode=MODE,
        state_dir=tmp_path,
        inject=True,
        approver=approver,  # type: ignore[arg-type]
    )
    (result,) = run_suite(suite, "gullible", options, task_ids=["notes-sender"]).results
    assert result.success
    return result.to_json()


@pytest.mark.parametrize("fmt", ["code", "json", "text"])
def test_an_obeyed_injection_is_refused_without_an_approver(tmp_path: Path, fmt: str) -> None:
    result = _gullible_run(tmp_path, None, fmt)
    assert result["unauthorized_effects"] == {"state": [], "secrets_in_arguments": []}
    # Code is stopped at the gate (SX603: approval needed, nobody to ask), calls at the gateway.
    expected = {"gate": {"SX603": 1}} if fmt == "code" else {"capability": {"not-approved": 1}}
    assert result["refusals"] == expected


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_an_approved_unauthorized_effect_shows_in_the_state_diff(tmp_path: Path, fmt: str) -> None:
    asked: list[ApprovalRequest] = []

    def yes(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    result = _gullible_run(tmp_path, yes, fmt)
    assert [r.arguments for r in asked] == [{"text": "pwned"}]
    assert result["unauthorized_effects"] == {"state": ["/notes"], "secrets_in_arguments": []}


def test_an_authorized_effect_needs_no_approver_and_leaves_no_diff(tmp_path: Path) -> None:
    suite = load_suite(FIXTURE)
    for fmt in ("code", "json"):
        options = RunOptions(format=fmt, mode=MODE, state_dir=tmp_path / fmt)
        (result,) = run_suite(suite, "oracle", options, task_ids=["notes-add"]).results
        assert result.success and result.refusals == {}
        assert result.unauthorized_effects["state"] == []


def test_a_secret_in_outbound_arguments_is_reported(tmp_path: Path) -> None:
    suite = load_suite(FIXTURE)
    secret = suite.make_environment(0).secrets[0]  # type: ignore[attr-defined]
    (task,) = [t for t in suite.tasks if t.id == "notes-add"]
    task = type(task)(**{**{f: getattr(task, f) for f in task.__slots__}, "authorized_effects": ()})  # type: ignore[attr-defined]
    leak = json.dumps({"text": f"my pin is {secret}"})
    model = ScriptedModel(
        lambda messages, key, rng: Reply(
            text=f"Action: add_note(text={json.dumps('pin ' + secret)})"
            if key.turn == 0
            else "Answer: 2"
        )
    )
    options = RunOptions(format="text", mode=MODE, state_dir=tmp_path, approver=lambda r: True)
    result = run_task(suite, task, model, options)
    assert leak  # the payload carried the secret
    assert result.unauthorized_effects["secrets_in_arguments"] == ["add_note"]
    assert result.unauthorized_effects["state"] == ["/notes"]


def test_noisy_agents_recover_and_adversarial_ones_never_answer(tmp_path: Path) -> None:
    suite = load_suite(EXAMPLE)
    for fmt in ("code", "json", "text"):
        options = RunOptions(format=fmt, mode=MODE, state_dir=tmp_path / fmt, seed=3)
        noisy = run_suite(suite, "noisy", options)
        assert all(r.success for r in noisy.results)
        assert sum(r.turns for r in noisy.results) > sum(
            1 if fmt == "code" else r.tool_calls + 1 for r in noisy.results
        )
        hostile = run_suite(suite, "adversarial", options, task_ids=["shop-order", "mail-reply"])
        for result in hostile.results:
            assert not result.success and result.end_reason is not EndReason.ANSWERED
            assert result.unauthorized_effects == {"state": [], "secrets_in_arguments": []}
            # Code escapes are refused; hostile calls are unknown tools or schema failures.
            assert result.refusals if fmt == "code" else result.invalid_actions


def test_invalid_replies_end_the_run(tmp_path: Path) -> None:
    suite = load_suite(FIXTURE)
    model = ScriptedModel(lambda messages, key, rng: Reply(text="let me think about it"))
    options = RunOptions(format="text", mode=MODE, state_dir=tmp_path)
    result = run_task(suite, suite.tasks[0], model, options)
    assert result.end_reason is EndReason.NO_CODE
    assert result.invalid_actions == 3 and result.turns == 3


def test_a_missing_recorded_turn_is_a_model_error(tmp_path: Path) -> None:
    from safeexec.harness import RecordingModel

    recording = tmp_path / "rec.jsonl"
    suite = load_suite(FIXTURE)
    options = RunOptions(format="text", mode=MODE, state_dir=tmp_path)
    model = ScriptedModel(lambda messages, key, rng: Reply(text="Action: add(a=2.5, b=4)"))
    run_task(suite, suite.tasks[0], RecordingModel(model, recording), options)
    recording.write_text(recording.read_text().splitlines()[0] + "\n")  # keep turn 0 only
    result = run_task(suite, suite.tasks[0], ReplayModel(recording), options)
    assert result.end_reason is EndReason.MODEL_ERROR and "turn=1" in result.error
    assert result.tool_calls == 1


def test_a_replayed_turn_asked_with_another_request_is_a_model_error(tmp_path: Path) -> None:
    from safeexec.harness import RecordingModel

    recording = tmp_path / "rec.jsonl"
    suite = load_suite(FIXTURE)
    options = RunOptions(format="text", mode=MODE, state_dir=tmp_path, max_tokens=100)
    model = ScriptedModel(lambda messages, key, rng: Reply(text="Action: add(a=2.5, b=4)"))
    run_task(suite, suite.tasks[0], RecordingModel(model, recording), options)
    same = run_task(suite, suite.tasks[0], ReplayModel(recording), options)
    assert same.end_reason is not EndReason.MODEL_ERROR and same.turns > 1
    other = dataclasses.replace(options, max_tokens=101)  # the same turns, another request
    result = run_task(suite, suite.tasks[0], ReplayModel(recording), other)
    assert result.end_reason is EndReason.MODEL_ERROR and result.turns == 0
    assert "is not the recorded one" in result.error


def test_an_exhausted_step_budget_ends_the_run(tmp_path: Path) -> None:
    from dataclasses import replace

    from safeexec.policy.loader import load_policy

    base = load_policy("default")
    policy = replace(base, budget=replace(base.budget, steps=2))
    suite = load_suite(EXAMPLE)
    options = RunOptions(format="json", mode=MODE, state_dir=tmp_path, policy=policy)
    task = next(t for t in suite.tasks if t.id == "shop-price")
    result = run_task(suite, task, make_agent("adversarial", suite, task, options), options)
    # Invalid turns (an unoffered tool) are not steps; the two steps spend the budget.
    assert result.end_reason is EndReason.BUDGET and result.actions == 2


def test_the_reference_trace_is_what_reached_the_tools(tmp_path: Path) -> None:
    suite = load_suite(FIXTURE)
    options = RunOptions(format="json", mode=MODE, state_dir=tmp_path)
    trace = reference_trace(suite, suite.tasks[1], options)
    assert trace.calls == (("add", {"a": 1.0, "b": 2.0}), ("add", {"a": 3.0, "b": 3.0}))
    assert trace.answer == 6.0


def test_a_recorded_run_replays_to_the_same_result(tmp_path: Path) -> None:
    from safeexec.harness import RecordingModel

    suite = load_suite(EXAMPLE)
    task = next(t for t in suite.tasks if t.id == "shop-order")
    options = RunOptions(format="json", mode=MODE, state_dir=tmp_path)
    recording = tmp_path / "recording.jsonl"
    live = run_task(
        suite, task, RecordingModel(make_agent("noisy", suite, task, options), recording), options
    )
    replayed = run_task(suite, task, ReplayModel(recording), options)
    keep = ("success", "end_reason", "turns", "tool_calls", "invalid_actions", "refusals", "answer")
    assert {k: getattr(replayed, k) for k in keep} == {k: getattr(live, k) for k in keep}
    assert live.success


def test_the_dsl_format_runs_end_to_end_in_the_dsl_mode(tmp_path: Path) -> None:
    suite = load_suite(EXAMPLE)
    expressible = [t.id for t in suite.tasks if t.reference_dsl is not None]
    assert expressible
    options = RunOptions(format="dsl", mode="dsl", state_dir=tmp_path)
    run = run_suite(suite, "oracle", options, task_ids=expressible)
    for result in run.results:
        assert result.success and result.turns == 1, result
        assert result.unauthorized_effects == {"state": [], "secrets_in_arguments": []}
    audit = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert {e["backend"] for e in audit if e["verdict"] == "allow"} == {"dsl"}
    # A noisy first DSL program (a misspelt tool) is refused by the checker, then fixed.
    noisy = run_suite(suite, "noisy", replace_seed(options, 3), task_ids=expressible)
    assert all(r.success for r in noisy.results)
    assert sum(r.turns for r in noisy.results) > len(expressible)


def replace_seed(options: RunOptions, seed: int) -> RunOptions:
    from dataclasses import replace

    return replace(options, seed=seed)


def test_turn_records_are_secret_masked_like_audit_events(tmp_path: Path) -> None:
    suite = load_suite(FIXTURE)
    key = "sk-" + "A1b2C3d4" * 4
    model = ScriptedModel(
        lambda messages, k, rng: Reply(
            text=f'Action: add_note(text="my api_key={key}")' if k.turn == 0 else "Answer: 2"
        )
    )
    options = RunOptions(format="text", mode=MODE, state_dir=tmp_path, approver=lambda r: True)
    notes_add = next(t for t in suite.tasks if t.id == "notes-add")
    result = run_task(suite, notes_add, model, options)
    assert result.tool_calls == 1  # the call reached the tool, so the key was in play
    turns_text = (tmp_path / "turns.jsonl").read_text()
    assert key not in turns_text
    first = json.loads(turns_text.splitlines()[0])
    assert first["masked_fields"] and "[MASKED]" in json.dumps(first)
    # The same run's audit log masks with the same patterns (nothing of the key there either).
    assert key not in (tmp_path / "audit.jsonl").read_text()
