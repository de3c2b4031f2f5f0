"""A real smolagents CodeAgent, driven by a scripted model, running its code through safeexec."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from smolagents import CodeAgent, Tool
from smolagents.memory import ActionStep
from smolagents.models import ChatMessage, MessageRole, Model

from safeexec.errors import CapabilityError
from safeexec.faces.smolagents_executor import SafeexecExecutor, tool_spec
from safeexec.model.values import ToolCalled, Verdict
from safeexec.policy.loader import load_policy
from safeexec.session.session import Session

POLICY = """
extends = "default"

[capabilities.price_of]
grantable = true
max_calls = 2
"""


class PriceOf(Tool):
    name = "price_of"
    description = "The price of one item, in euros."
    inputs: ClassVar[dict[str, dict[str, str]]] = {
        "item": {"type": "string", "description": "The item's name."}
    }
    output_type = "number"

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def forward(self, item: str) -> float:
        self.asked.append(item)
        return {"apple": 0.5, "pear": 0.75}[item]


class ScriptedModel(Model):
    """Replies from a script, one per call; records what the agent showed it."""

    def __init__(self, replies: list[str]) -> None:
        super().__init__(model_id="scripted")
        self._replies = iter(replies)
        self.prompts: list[str] = []

    def generate(
        self,
        messages: list[Any],
        stop_sequences: list[str] | None = None,
        response_format: dict[str, str] | None = None,
        tools_to_call_from: list[Tool] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        self.prompts.append(str(messages[-1]))
        return ChatMessage(role=MessageRole.ASSISTANT, content=next(self._replies))


def _reply(thought: str, code: str) -> str:
    return f"Thought: {thought}\n<code>\n{code}\n</code>"


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    (tmp_path / "agent.toml").write_text(POLICY)
    policy = load_policy(tmp_path / "agent.toml")
    with Session(policy=policy, state_dir=tmp_path / "state", mode="native") as s:
        yield s


def _steps(agent: CodeAgent) -> list[ActionStep]:
    return [s for s in agent.memory.steps if isinstance(s, ActionStep)]


def test_a_code_agent_completes_a_two_step_task_through_safeexec(session: Session) -> None:
    prices = PriceOf()
    model = ScriptedModel(
        [
            _reply(
                "Look up both prices.", "a = price_of('apple')\np = price_of('pear')\nprint(a, p)"
            ),
            _reply("Three apples and a pear.", "final_answer(3 * a + p)"),
        ]
    )
    agent = CodeAgent(tools=[prices], model=model, executor=SafeexecExecutor(session))
    assert agent.run("What do three apples and a pear cost?") == 2.25
    assert prices.asked == ["apple", "pear"]  # the tool ran in the host, once per call
    assert "0.5 0.75" in model.prompts[1]  # the second turn saw the first step's output
    setup, *events = session.audit.read()  # first the final_answer wrapper, then the actions
    assert setup.verdict is Verdict.ALLOW and not setup.side_effects
    assert [e.verdict for e in events] == [Verdict.ALLOW, Verdict.ALLOW]
    calls = [[e.tool for e in ev.side_effects if isinstance(e, ToolCalled)] for ev in events]
    assert calls == [["price_of", "price_of"], ["final_answer"]]


def test_an_escape_attempt_from_the_agent_is_refused_and_shown_to_the_model(
    session: Session,
) -> None:
    model = ScriptedModel(
        [
            _reply("Escape.", "import ctypes\nctypes.string_at(0)"),
            _reply("Give up.", "final_answer('no')"),
        ]
    )
    agent = CodeAgent(tools=[], model=model, executor=SafeexecExecutor(session))
    assert agent.run("Try to break out.") == "no"
    first = _steps(agent)[0]
    assert first.error is not None and "SX202" in str(first.error)
    assert "SX202" in model.prompts[1]  # the model was told which rule refused it
    _, *events = session.audit.read()
    assert [e.verdict for e in events] == [Verdict.DENY, Verdict.ALLOW]


def test_a_tool_past_its_call_limit_is_refused_before_or_while_it_runs(session: Session) -> None:
    model = ScriptedModel(
        [
            _reply(
                "Three lookups.",
                "for item in ['apple', 'pear', 'apple']:\n    print(price_of(item))",
            ),
            _reply("Two, then.", "print(price_of('apple'), price_of('pear'))"),
            _reply("One more.", "n = 'apple'\nprint(price_of(n))"),
            _reply("Done.", "final_answer('done')"),
        ]
    )
    prices = PriceOf()
    agent = CodeAgent(tools=[prices], model=model, executor=SafeexecExecutor(session))
    agent.run("Look up three prices.")
    steps = _steps(agent)
    assert "SX602" in str(steps[0].error)  # the estimate: 3 calls over max_calls = 2
    assert steps[1].error is None
    assert "call limit reached" in str(steps[2].error) or "SX602" in str(steps[2].error)
    assert prices.asked == ["apple", "pear"]  # the policy's max_calls = 2, across steps


@pytest.mark.parametrize("mode", ["native", "restricted"])
def test_final_answer_ends_the_code_action_at_once_even_inside_except_exception(
    tmp_path: Path, mode: str
) -> None:
    (tmp_path / "agent.toml").write_text(POLICY)
    prices = PriceOf()
    code = (
        "print('before')\n"
        "try:\n"
        "    final_answer(price_of('apple'))\n"
        "except Exception:\n"
        "    print('swallowed')\n"
        "price_of('pear')\n"
        "print('after')"
    )
    model = ScriptedModel([_reply("Answer and stop.", code)])
    with Session(
        policy=load_policy(tmp_path / "agent.toml"), state_dir=tmp_path / "state", mode=mode
    ) as session:
        agent = CodeAgent(tools=[prices], model=model, executor=SafeexecExecutor(session))
        assert agent.run("The price of an apple?") == 0.5
        (step,) = _steps(agent)
        assert step.is_final_answer and step.error is None
        assert step.observations is not None and "before" in step.observations
        assert "swallowed" not in step.observations and "after" not in step.observations
        assert prices.asked == ["apple"]  # nothing after final_answer ran
        *_, event = session.audit.read()
        tools = [e.tool for e in event.side_effects if isinstance(e, ToolCalled)]
        assert tools == ["price_of", "final_answer"]


def test_a_code_agent_runs_under_the_shipped_default_pack_as_it_is(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            _reply("Count.", "words = ['a', 'b', 'c']\nn = len(words)"),
            _reply("Done.", "final_answer(n)"),
        ]
    )
    with Session(policy="default", state_dir=tmp_path / "state", mode="native") as session:
        agent = CodeAgent(tools=[], model=model, executor=SafeexecExecutor(session))
        assert agent.run("How many words?") == 3
        *_, event = session.audit.read()
        assert event.policy_id == "default"
        assert [e.tool for e in event.side_effects if isinstance(e, ToolCalled)] == ["final_answer"]


def test_the_last_expression_is_the_output_the_model_sees(session: Session) -> None:
    model = ScriptedModel(
        [_reply("Compute.", "total = 3 * 7\ntotal"), _reply("Answer.", "final_answer(total)")]
    )
    agent = CodeAgent(tools=[], model=model, executor=SafeexecExecutor(session))
    assert agent.run("Three sevens?") == 21
    assert "Last output from code snippet:\\n21" in model.prompts[1]  # the message's repr


def test_variables_reach_the_sandbox_as_data(session: Session) -> None:
    model = ScriptedModel([_reply("Use the given list.", "final_answer(sum(numbers))")])
    agent = CodeAgent(tools=[], model=model, executor=SafeexecExecutor(session))
    assert agent.run("Add them.", additional_args={"numbers": [1, 2, 3]}) == 6


def test_a_tool_the_policy_does_not_list_cannot_be_granted(session: Session) -> None:
    class Shell(Tool):
        name = "shell"
        description = "Runs a command."
        inputs: ClassVar[dict[str, dict[str, str]]] = {
            "command": {"type": "string", "description": "The command."}
        }
        output_type = "string"

        def forward(self, command: str) -> str:
            raise AssertionError("never called")

    with pytest.raises(CapabilityError, match="not grantable"):
        SafeexecExecutor(session).send_tools({"shell": Shell()})


def test_tool_inputs_that_cannot_cross_as_json_are_refused() -> None:
    class Camera(Tool):
        name = "camera"
        description = "Takes a picture."
        inputs: ClassVar[dict[str, dict[str, str]]] = {
            "image": {"type": "image", "description": "A picture."}
        }
        output_type = "string"

        def forward(self, image: Any) -> str:
            return ""

    with pytest.raises(CapabilityError, match="cannot cross"):
        tool_spec(Camera())
