"""Action formats: prompts from the tool specs, parsers that never evaluate anything."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest

from safeexec.capabilities.gateway import tool
from safeexec.capabilities.specs import AnyJSON, hint_text
from safeexec.errors import ConfigurationError
from safeexec.harness import FORMATS, Reply, RunOptions, ToolCall, load_suite, run_suite
from safeexec.harness.formats import ActionKind, CodeFormat, JsonFormat, TextFormat


@tool(effects=["write"])
def place(item: str, quantity: int = 1, note: str | None = None) -> str:
    """Place an order."""
    return item


SPECS = [place]


def test_prompts_render_signatures_and_effects_from_the_specs() -> None:
    prompt = TextFormat().instructions(SPECS)
    assert "place(item: str, quantity: int = 1, note: str | None = null)" in prompt
    assert "[effects: write]" in prompt and "Answer:" in prompt
    assert "submit(value)" in CodeFormat().instructions(SPECS)
    (native,) = JsonFormat().native_tools(SPECS)
    assert native["name"] == "place" and native["parameters"] == dict(place.parameters)


def test_text_actions_take_literals_and_bind_positional_values_in_order() -> None:
    parsed = TextFormat().parse(Reply(text='Thinking.\nAction: place("mug", quantity=2)'), SPECS)
    assert parsed.kind is ActionKind.CALL
    assert parsed.arguments == {"item": "mug", "quantity": 2}
    parsed = TextFormat().parse(Reply(text='Action: place(item="x", note=null)'), SPECS)
    assert parsed.arguments == {"item": "x", "note": None}


def test_text_actions_that_are_not_literal_calls_are_invalid() -> None:
    for text in (
        "Action: place(item=__import__('os').getcwd())",
        "Action: place(item=x)",
        "Action: place(**{'item': 'x'})",
        "Action: nothing(item='x')",
        "Action: place(item='x'",
        "I would place an order.",
    ):
        parsed = TextFormat().parse(Reply(text=text), SPECS)
        assert parsed.kind is ActionKind.INVALID, text
        assert parsed.error


def test_an_answer_line_is_json_when_it_can_be() -> None:
    assert TextFormat().parse(Reply(text="Answer: [1, 2]"), SPECS).answer == [1, 2]
    assert TextFormat().parse(Reply(text="Answer: the red mug"), SPECS).answer == "the red mug"


def test_json_actions_need_exactly_one_known_call_with_an_object() -> None:
    fmt = JsonFormat()
    one = ToolCall(id="1", name="place", arguments='{"item": "mug"}')
    assert fmt.parse(Reply(tool_calls=(one,)), SPECS).arguments == {"item": "mug"}
    for calls in (
        (),
        (one, one),
        (ToolCall(id="1", name="plac", arguments="{}"),),
        (ToolCall(id="1", name="place", arguments="[1]"),),
        (ToolCall(id="1", name="place", arguments="{nope"),),
    ):
        assert fmt.parse(Reply(tool_calls=calls), SPECS).kind is ActionKind.INVALID
    # Every call id of a rejected multi-call turn gets a tool message back.
    messages = fmt.feedback(Reply(tool_calls=(one, one)), "rejected")
    assert [m.role for m in messages] == ["assistant", "tool", "tool"]


def test_the_dsl_format_is_a_fenced_program_for_the_dsl_mode_only(tmp_path: Path) -> None:
    fmt = FORMATS["dsl"]
    assert fmt.mode == "dsl" and "```dsl" in fmt.instructions(SPECS)
    reply = Reply(text='```dsl\nsubmit(value=place(item="mug"))\n```')
    assert fmt.parse(reply, SPECS).code == reply.text  # the session extracts and checks it
    suite = load_suite(Path(__file__).resolve().parent / "fixture_suite")
    options = RunOptions(format="dsl", mode="restricted", state_dir=tmp_path)
    with pytest.raises(ConfigurationError, match="runs only in mode='dsl'"):
        run_suite(suite, "oracle", options)


def test_signatures_read_type_names_back_from_the_one_schema_table() -> None:
    @tool(root=Path("/"))
    def every(
        s: str,
        i: int,
        f: float,
        b: bool,
        p: Path,
        xs: list[int],
        m: dict[str, float],
        lit: Literal["a", "b"],
        o: str | None,
        j: AnyJSON,
    ) -> None:
        """Every annotation a tool may use."""

    properties = every.parameters["properties"]
    assert isinstance(properties, dict)
    shown = {name: hint_text(schema) for name, schema in properties.items()}  # type: ignore[arg-type]
    assert shown == {
        "s": "str", "i": "int", "f": "float", "b": "bool", "p": "path", "xs": "list[int]",
        "m": "dict[str, float]", "lit": 'Literal["a", "b"]', "o": "str | None",
        "j": "any JSON value",
    }  # fmt: skip
