from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from safeexec.extract import combine, extract
from safeexec.model.values import Action, ActionSource, sha256_hex


def _codes(text: str) -> list[tuple[ActionSource, str]]:
    return [(action.source, action.code) for action in extract(text)]


FENCED = ActionSource.FENCED
TOOL = ActionSource.TOOL_CALL
RAW = ActionSource.RAW


@pytest.mark.parametrize("tag", ["python", "py", "python3", "Python", "py3"])
def test_fenced_block_with_a_python_tag_is_an_action(tag: str) -> None:
    assert _codes(f"Let me compute it.\n```{tag}\nprint(1 + 1)\n```\nThat prints 2.") == [
        (FENCED, "print(1 + 1)\n")
    ]


@pytest.mark.parametrize("tag", ["dsl", "DSL", "safeexec-dsl", "Safeexec-DSL"])
def test_fenced_block_with_a_dsl_tag_is_a_dsl_action(tag: str) -> None:
    (action,) = extract(f"```{tag}\nreturn 1\n```")
    assert (action.source, action.language, action.code) == (FENCED, "dsl", "return 1\n")


def test_tilde_fence_is_an_action() -> None:
    assert _codes("~~~python\nx = 1\n~~~\n") == [(FENCED, "x = 1\n")]


def test_several_blocks_come_out_in_order_with_the_text_around_them_ignored() -> None:
    reply = (
        "First:\n```python\na = 1\n```\nthen\n```py\nb = a + 1\n```\n"
        "finally\n~~~python3\nprint(b)\n~~~"
    )
    assert _codes(reply) == [(FENCED, "a = 1\n"), (FENCED, "b = a + 1\n"), (FENCED, "print(b)\n")]


def test_bare_fence_is_code_only_when_it_parses_as_python() -> None:
    reply = "```\nimport os\nprint(os.getcwd())\n```\n```\nthis is not python at all\n```"
    assert _codes(reply) == [(FENCED, "import os\nprint(os.getcwd())\n")]


@pytest.mark.parametrize(
    "output",
    ["42", "[1, 2, 3]", "{'a': -1, 'b': (2.5, None)}", "True", "'text'", "[" * 150 + "]" * 150],
)
def test_bare_fence_holding_only_a_literal_is_output_not_code(output: str) -> None:
    assert extract(f"The output is\n```\n{output}\n```") == ()


def test_bare_fence_with_a_literal_and_a_call_is_code() -> None:
    assert _codes("```\n[1, 2]\nprint(3)\n```") == [(FENCED, "[1, 2]\nprint(3)\n")]


@pytest.mark.parametrize("tag", ["bash", "sh", "text", "console", "javascript", "json"])
def test_non_python_fenced_blocks_are_not_actions(tag: str) -> None:
    assert extract(f"```{tag}\nls -la\nprint(1)\n```") == ()


def test_unterminated_final_fence_runs_to_the_end() -> None:
    assert _codes("Here:\n```python\nfor i in range(3):\n    print(i)\n") == [
        (FENCED, "for i in range(3):\n    print(i)\n")
    ]


def test_fence_closed_at_the_end_of_the_last_code_line() -> None:
    assert _codes("```python\nx = 1\nprint(x)```\nDone.\n```python\ny = 2\n```") == [
        (FENCED, "x = 1\nprint(x)\n"),
        (FENCED, "y = 2\n"),
    ]


def test_closing_fence_must_be_at_least_as_long_and_of_the_same_kind() -> None:
    reply = "````python\ns = '''\n```\n~~~\n'''\n````\n"
    assert _codes(reply) == [(FENCED, "s = '''\n```\n~~~\n'''\n")]


def test_indented_fence_inside_a_list_item_is_dedented() -> None:
    reply = "1. Run this:\n   ```python\n   if True:\n       print('x')\n   ```\n"
    assert _codes(reply) == [(FENCED, "if True:\n    print('x')\n")]


def test_fence_info_with_attributes_still_names_the_language() -> None:
    assert _codes('```{.python title="a.py"}\nx = 1\n```') == [(FENCED, "x = 1\n")]
    assert _codes("```python title=a.py\nx = 1\n```") == [(FENCED, "x = 1\n")]
    assert _codes("```python:src/a.py\nx = 1\n```") == [(FENCED, "x = 1\n")]
    assert extract("```pythonic\nx = 1\n```") == ()


def test_inline_triple_backticks_are_not_a_fence() -> None:
    assert extract("Use ```print(1)``` to print.") == ()


def test_empty_python_block_is_not_an_action() -> None:
    assert extract("```python\n\n   \n```") == ()


def test_crlf_reply_is_split_into_lines() -> None:
    assert _codes("```python\r\nx = 1\r\ny = 2\r\n```\r\n") == [(FENCED, "x = 1\ny = 2\n")]


def test_openai_call_with_arguments_as_a_json_string() -> None:
    reply = json.dumps({"name": "python", "arguments": json.dumps({"code": "print('hi')"})})
    assert _codes(reply) == [(TOOL, "print('hi')")]


def test_openai_call_with_arguments_as_an_object() -> None:
    reply = json.dumps({"name": "run_python", "arguments": {"code": "x = 1"}})
    assert _codes(reply) == [(TOOL, "x = 1")]


def test_openai_tool_calls_message() -> None:
    reply = json.dumps(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "py", "arguments": '{"code": "a = 1"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"q": "x"}'},
                },
                {
                    "id": "c3",
                    "type": "function",
                    "function": {"name": "py", "arguments": {"code": "b = 2"}},
                },
            ],
        }
    )
    assert _codes(reply) == [(TOOL, "a = 1"), (TOOL, "b = 2")]


def test_legacy_openai_function_call_message() -> None:
    reply = json.dumps(
        {
            "role": "assistant",
            "content": None,
            "function_call": {"name": "python", "arguments": '{"code": "v = 5"}'},
        }
    )
    assert _codes(reply) == [(TOOL, "v = 5")]


def test_anthropic_tool_use_block() -> None:
    reply = json.dumps(
        {"type": "tool_use", "id": "t1", "name": "python", "input": {"code": "y = 3"}}
    )
    assert _codes(reply) == [(TOOL, "y = 3")]


def test_list_of_tool_calls_in_order() -> None:
    reply = json.dumps(
        [
            {"type": "tool_use", "id": "t1", "name": "python", "input": {"code": "a = 1"}},
            {"name": "python", "arguments": {"code": "b = 2"}},
        ]
    )
    assert _codes(reply) == [(TOOL, "a = 1"), (TOOL, "b = 2")]


def test_anthropic_message_content_with_text_and_tool_use() -> None:
    reply = json.dumps(
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Plan:\n```python\nplan = 1\n```\nand the call"},
                {"type": "tool_use", "id": "t1", "name": "python", "input": {"code": "run = 2"}},
            ],
        }
    )
    assert _codes(reply) == [(FENCED, "plan = 1\n"), (TOOL, "run = 2")]


def test_text_content_is_not_taken_as_raw_code() -> None:
    reply = json.dumps({"role": "assistant", "content": [{"type": "text", "text": "print(1)"}]})
    assert extract(reply) == ()


def test_tool_call_in_a_json_fence_is_an_action() -> None:
    call = json.dumps({"name": "python", "arguments": {"code": "z = 9"}}, indent=2)
    assert _codes(f"I will call the tool:\n```json\n{call}\n```\n") == [(TOOL, "z = 9")]


def test_tool_call_naming_another_language_is_not_a_python_action() -> None:
    reply = json.dumps({"name": "run", "arguments": {"code": "ls -la", "language": "bash"}})
    assert extract(reply) == ()
    reply = json.dumps({"name": "run", "arguments": {"code": "x = 1", "language": "Python"}})
    assert _codes(reply) == [(TOOL, "x = 1")]


@pytest.mark.parametrize(
    "reply",
    [
        '{"name": "python", "arguments": {"code": "print(1)"',
        '{"name": "python", "arguments": "{\\"code\\": "}',
        '{"name": "python", "arguments": {"code": 42}}',
        '{"name": "python", "arguments": ["print(1)"]}',
        '{"name": "python"}',
        '{"tool_calls": "nope"}',
        '{"tool_calls": [{"function": "nope"}]}',
        "[1, 2, 3]",
        '{"a": 1}',
        "[" * 100_000,
        "[" * 100_000 + "]" * 100_000,
        "null",
    ],
)
def test_malformed_or_codeless_json_gives_no_actions(reply: str) -> None:
    assert extract(reply) == ()


def test_raw_reply_that_parses_as_python_is_an_action() -> None:
    code = "import math\nprint(math.pi)\n"
    assert _codes(code) == [(RAW, code)]


@pytest.mark.parametrize(
    "reply",
    ["", "   \n\t", "Done", "42", "Yes.", "I cannot do that.", "...", "Answer: 42", "Status: done"],
)
def test_prose_empty_or_a_bare_name_is_not_code(reply: str) -> None:
    assert extract(reply) == ()


def test_raw_reply_with_null_bytes_or_surrogates_is_not_code() -> None:
    assert extract("print(1)\0") == ()
    assert extract("x = '\ud800'") == ()


def test_each_action_carries_the_sha256_of_its_code() -> None:
    actions = extract("```python\nx = 1\n```\n```python\ny = 2\n```")
    assert len(actions) == 2
    for action in actions:
        assert action.code_sha256 == sha256_hex(action.code)
        assert action.language == "python"


def test_combine_joins_blocks_with_a_blank_line_and_a_fresh_id() -> None:
    actions = extract("```python\na = 1\n```\n```python\nprint(a)\n```")
    combined = combine(actions)
    assert combined is not None
    assert combined.code == "a = 1\n\nprint(a)\n"
    assert combined.source is FENCED
    assert combined.code_sha256 == sha256_hex(combined.code)
    assert combined.action_id not in {action.action_id for action in actions}


def test_combine_keeps_a_single_action_byte_for_byte() -> None:
    (action,) = extract(json.dumps({"name": "python", "arguments": {"code": "x = 1"}}))
    combined = combine((action,))
    assert combined is not None
    assert (combined.code, combined.code_sha256, combined.source) == (
        action.code,
        action.code_sha256,
        TOOL,
    )


def test_combine_skips_non_python_actions_and_takes_the_first_python_source() -> None:
    shell = Action.create("ls", source=FENCED, language="bash")
    tool = Action.create("a = 1", source=TOOL)
    fenced = Action.create("b = 2\n", source=FENCED)
    combined = combine((shell, tool, fenced))
    assert combined is not None
    assert combined.code == "a = 1\n\nb = 2\n"
    assert combined.source is TOOL


def test_combine_of_nothing_is_none() -> None:
    assert combine(()) is None
    assert combine((Action.create("ls", language="bash"),)) is None


_ANY_TEXT = st.text(alphabet=st.characters(exclude_categories=()))
_REPLY_PIECES = st.sampled_from(
    [
        "```",
        "```python\n",
        "```py\n",
        "~~~",
        "~~~python\n",
        "````",
        "```json\n",
        "\n",
        "\r\n",
        "print(1)\n",
        "x = (",
        "    ",
        "{",
        "}",
        "[",
        "]",
        '"name": "py", ',
        '"arguments": ',
        '{"code": "a = 1"}',
        '"{\\"code\\": \\"b\\"}"',
        '"tool_calls": [',
        '"type": "tool_use", ',
        '"input": ',
        ",",
        "\0",
        "\ud800",
        "Done",
        "prose ",
    ]
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_ANY_TEXT)
@example("```DSL\n0")  # found by CI: a DSL-tagged fence is a DSL action
def test_extract_never_raises_on_arbitrary_text(text: str) -> None:
    for action in extract(text):
        # Only a fence tagged as DSL yields DSL; everything else that is code is Python.
        assert action.language in ("python", "dsl")
        if action.language == "dsl":
            assert action.source is FENCED
        assert action.code.strip()
        assert action.code_sha256 == sha256_hex(action.code)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_REPLY_PIECES, max_size=40).map("".join))
def test_combine_of_extract_is_stable(text: str) -> None:
    first = combine(extract(text))
    second = combine(extract(text))
    if first is None:
        assert second is None
        return
    assert second is not None
    assert (first.code, first.code_sha256, first.source) == (
        second.code,
        second.code_sha256,
        second.source,
    )
    again = combine((first,))
    assert again is not None
    assert again.code == first.code
