"""The M3ToolEval adapter on a fixture in its task-package format: the paper's protocol (the
task's prompt, parser and checker; 10 turns; answer guesses; single-tool tasks; generic JSON/text
errors), with code actions run by safeexec."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from benchmarks.ablation.m3tooleval import TURNS, load_tasks, run_m3
from safeexec.harness.models import Message, Reply, TurnKey

FIXTURE = Path(__file__).resolve().parent / "m3tooleval_fixture"
PACKAGE, TASKS = load_tasks(FIXTURE)
BY_NAME = {t.name: t for t in TASKS}


class Scripted:
    """Replies in order (the last one again when they run out); keeps what it was shown."""

    name = "scripted"

    def __init__(self, replies: Sequence[str]) -> None:
        self.replies = list(replies)
        self.seen: list[str] = []

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, object]] = (),
        key: TurnKey,
    ) -> Reply:
        self.seen.append(messages[-1].content)
        return Reply(text=self.replies[min(key.turn, len(self.replies) - 1)])


def test_the_tasks_come_from_the_checkout_in_its_order() -> None:
    assert [t.name for t in TASKS] == ["tiny/reverse", "tiny/longest-shouted"]
    with pytest.raises(FileNotFoundError):
        load_tasks(FIXTURE / "tasks")


def test_a_code_action_runs_in_safeexec_with_the_tools_under_their_own_names(
    tmp_path: Path,
) -> None:
    code = "Action:\nprint(reverse_string(shout(longest('ab', 'abcd', 'abc'))))\nEnd Action"
    model = Scripted([code, "Answer: DCBA"])
    run = run_m3(PACKAGE, BY_NAME["tiny/longest-shouted"], model, "code", tmp_path)
    assert model.seen[1].strip() == "DCBA"  # the program's output came back as the observation
    assert run.correct and run.turns == 2 and run.end_reason == "correct"


def test_the_sandbox_refuses_what_restricted_mode_refuses(tmp_path: Path) -> None:
    model = Scripted(["Action:\nimport os\nprint(os.listdir('/'))\nEnd Action", "Answer: no"])
    run = run_m3(PACKAGE, BY_NAME["tiny/longest-shouted"], model, "code", tmp_path)
    assert "os" in model.seen[1] and "bin" not in model.seen[1]
    assert not run.correct and run.turns == TURNS and run.answers == TURNS - 1


def test_wrong_answers_are_retried_until_the_turn_limit(tmp_path: Path) -> None:
    model = Scripted(["Answer: nope", "Answer: still no", "Answer: DCBA"])
    run = run_m3(PACKAGE, BY_NAME["tiny/longest-shouted"], model, "json", tmp_path)
    assert run.correct and run.answers == 3 and run.turns == 3
    assert model.seen[1].startswith("Your answer is incorrect")
    never = Scripted(["Answer: nope"])
    run = run_m3(PACKAGE, BY_NAME["tiny/longest-shouted"], never, "text", tmp_path)
    assert not run.correct and run.turns == TURNS and run.end_reason == "limit"


def test_a_single_tool_task_is_done_when_an_action_result_checks(tmp_path: Path) -> None:
    model = Scripted(['Action: {"tool": "reverse_string", "args": ["stressed"]} End Action'])
    run = run_m3(PACKAGE, BY_NAME["tiny/reverse"], model, "json", tmp_path)
    assert run.correct and run.turns == 1 and run.answers == 0


def test_json_and_text_errors_are_the_tasks_own_generic_ones(tmp_path: Path) -> None:
    model = Scripted(
        ["Action: shout End Action", 'Action: {"tool": "shout", "args": [1]} End Action', "x"]
    )
    run_m3(PACKAGE, BY_NAME["tiny/longest-shouted"], model, "json", tmp_path)
    assert model.seen[1].startswith("Invalid action.")
    assert model.seen[2] == "Failed to execute tool shout with args [1]."  # the cause unsaid
    assert "'Action:' or 'Answer:'" in model.seen[3]
    text = Scripted(["Action: longest, ab, abcd End Action", "Answer: DCBA"])
    run = run_m3(PACKAGE, BY_NAME["tiny/longest-shouted"], text, "text", tmp_path)
    assert text.seen[1] == "abcd" and run.correct


def test_a_reply_is_cut_at_its_second_action_or_answer(tmp_path: Path) -> None:
    both = "Action: reverse_string, stressed End Action\nAnswer: desserts"
    model = Scripted([both])
    run = run_m3(PACKAGE, BY_NAME["tiny/reverse"], model, "text", tmp_path)
    assert run.correct and run.answers == 0  # the action ran; the extra answer was cut
