"""Tool definitions and dispatch, checked against the official OpenAI and Anthropic SDK types.

Offline: the SDK clients talk to an ``httpx.MockTransport`` that records the request body they
built from our definitions and results, and answers with a canned reply.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
from anthropic.types import (
    DocumentBlockParam,
    ImageBlockParam,
    MessageParam,
    TextBlockParam,
    ToolParam,
    ToolResultBlockParam,
    ToolUseBlock,
)
from anthropic.types.tool_result_block_param import Content as ToolResultContent
from openai.types.chat import (
    ChatCompletionContentPartParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageParam,
)
from openai.types.responses import (
    FunctionToolParam,
    ResponseFunctionCallOutputItemParam,
    ResponseFunctionToolCall,
    ResponseInputItemParam,
)
from pydantic import TypeAdapter

from safeexec.capabilities.gateway import tool
from safeexec.faces.tooldefs import (
    RUN_CODE,
    anthropic_tool,
    dispatch,
    dispatch_many,
    openai_tool,
)
from safeexec.policy.loader import load_policy
from safeexec.policy.schema import CapabilityConfig
from safeexec.session.session import Session

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FIGURE = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nprint('drawn')"


@tool(effects=["read"])
def lookup(key: str) -> str:
    """The value stored under ``key``."""
    return {"a": "apple"}.get(key, "?")


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    base = load_policy("default")
    policy = dataclasses.replace(
        base, capabilities=(*base.capabilities, CapabilityConfig(tool="lookup", max_calls=1))
    )
    with Session(policy=policy, state_dir=tmp_path / "state", mode="native") as s:
        s.grant(lookup)
        yield s


def _valid(kind: Any, value: object) -> None:
    TypeAdapter(kind).validate_python(value, strict=False)


def test_definitions_are_valid_sdk_tool_params_and_name_the_granted_tools() -> None:
    for definition in openai_tool([lookup], api="chat"):
        _valid(ChatCompletionFunctionToolParam, definition)
    for definition in openai_tool([lookup], api="responses"):
        _valid(FunctionToolParam, definition)
    for definition in anthropic_tool([lookup]):
        _valid(ToolParam, definition)
    names = [d["name"] for d in anthropic_tool([lookup])]
    assert names == [RUN_CODE, "lookup"]
    schema = anthropic_tool()[0]["input_schema"]
    assert isinstance(schema, dict) and schema["required"] == ["code"]


def test_an_openai_chat_tool_call_round_trips_with_its_figure_as_image_content(
    session: Session,
) -> None:
    call = ChatCompletionMessageFunctionToolCall(
        id="call_1",
        type="function",
        function={"name": RUN_CODE, "arguments": json.dumps({"code": FIGURE})},
    )
    messages = dispatch(session, call)
    for message in messages:
        _valid(ChatCompletionMessageParam, message)
    tool_message, figures = messages
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_1"
    assert "drawn" in tool_message["content"]
    url = figures["content"][1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]).startswith(PNG_MAGIC)
    # The SDK sends the whole conversation, our definitions and results included.
    sent = _send_openai_chat(
        [
            {"role": "user", "content": "plot"},
            {"role": "assistant", "tool_calls": [call.model_dump()]},
            *messages,
        ]
    )
    assert sent["tools"][0]["function"]["name"] == RUN_CODE
    assert sent["messages"][2]["role"] == "tool"


def test_a_responses_function_call_round_trips_and_state_carries_over(session: Session) -> None:
    first = ResponseFunctionToolCall(
        type="function_call",
        call_id="fc_1",
        name=RUN_CODE,
        arguments=json.dumps({"code": "total = 40 + 2"}),
    )
    second = {
        "type": "function_call",
        "call_id": "fc_2",
        "name": RUN_CODE,
        "arguments": json.dumps({"code": "print(total)"}),
    }
    dispatch(session, first)
    (item,) = dispatch(session, second)
    _valid(ResponseInputItemParam, item)
    assert item["call_id"] == "fc_2" and "42" in item["output"]


def test_an_anthropic_tool_use_round_trips_into_a_tool_result_with_an_image_block(
    session: Session,
) -> None:
    block = ToolUseBlock(type="tool_use", id="toolu_1", name=RUN_CODE, input={"code": FIGURE})
    (message,) = dispatch(session, block)
    _valid(MessageParam, message)
    (result,) = message["content"]
    _valid(ToolResultBlockParam, result)  # the SDK's Iterable fields validate lazily: each part too
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1"
    assert result["is_error"] is False
    text, image = result["content"]
    _valid(TextBlockParam, text)
    _valid(ImageBlockParam, image)
    assert base64.b64decode(image["source"]["data"]).startswith(PNG_MAGIC)
    sent = _send_anthropic(
        [
            {"role": "user", "content": "plot"},
            {"role": "assistant", "content": [block.model_dump()]},
            message,
        ]
    )
    assert sent["messages"][2]["content"][0]["content"][1]["type"] == "image"


TINY_PNG = (  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAE"
    "hQGAhKmMIQAAAABJRU5ErkJggg=="
)


def test_a_rich_display_comes_back_as_an_image_and_a_figure_only_once(session: Session) -> None:
    code = (
        "import base64\n"
        "class Dot:\n"
        "    def _repr_png_(self):\n"
        f"        return base64.b64decode({TINY_PNG!r})\n"
        "Dot()"
    )
    (message,) = dispatch(
        session, {"type": "tool_use", "id": "t", "name": RUN_CODE, "input": {"code": code}}
    )
    images = [b for b in message["content"][0]["content"] if b["type"] == "image"]
    assert [image["source"]["data"] for image in images] == [TINY_PNG]
    # A figure that is both an artifact and the last expression's display is sent once.
    figure = FIGURE + "\nplt.gcf()"
    (message,) = dispatch(
        session, {"type": "tool_use", "id": "u", "name": RUN_CODE, "input": {"code": figure}}
    )
    assert sum(b["type"] == "image" for b in message["content"][0]["content"]) == 1


FILES = (
    "open('report.pdf', 'wb').write(b'%PDF-1.4\\n%%EOF\\n')\n"
    "open('table.csv', 'w').write('a,b\\n1,2\\n')\n"
    "open('blob.bin', 'wb').write(bytes(range(256)))\n"
)


def test_non_image_files_come_back_as_each_apis_file_content_or_a_text_reference(
    session: Session,
) -> None:
    chat_call = {
        "id": "c",
        "type": "function",
        "function": {"name": RUN_CODE, "arguments": json.dumps({"code": FILES})},
    }
    _, user = dispatch(session, chat_call)
    _valid(ChatCompletionMessageParam, user)
    parts = {p["type"]: p for p in user["content"][1:]}
    for part in user["content"]:
        _valid(ChatCompletionContentPartParam, part)
    assert parts["file"]["file"]["filename"] == "report.pdf"
    assert parts["file"]["file"]["file_data"].startswith("data:application/pdf;base64,")
    texts = [p["text"] for p in user["content"] if p["type"] == "text"]
    assert any("a,b\n1,2" in t for t in texts)
    assert any("'blob.bin'" in t and "not attached" in t for t in texts)

    responses_call = {
        "type": "function_call",
        "call_id": "f",
        "name": RUN_CODE,
        "arguments": json.dumps({"code": FILES.replace("1,2", "3,4")}),
    }
    (item,) = dispatch(session, responses_call)
    _valid(ResponseInputItemParam, item)
    for part in item["output"]:
        _valid(ResponseFunctionCallOutputItemParam, part)
    kinds = [p["type"] for p in item["output"]]
    assert kinds.count("input_file") == 1 and "input_image" not in kinds
    (pdf,) = [p for p in item["output"] if p["type"] == "input_file"]
    assert pdf["filename"] == "report.pdf"

    tool_use = {
        "type": "tool_use",
        "id": "t",
        "name": RUN_CODE,
        "input": {"code": FILES.replace("1,2", "5,6")},
    }
    (message,) = dispatch(session, tool_use)
    _valid(MessageParam, message)
    blocks = message["content"][0]["content"]
    for block in blocks:
        _valid(ToolResultContent, block)
    documents = {b["title"]: b for b in blocks if b["type"] == "document"}
    for document in documents.values():
        _valid(DocumentBlockParam, document)
    assert documents["report.pdf"]["source"]["media_type"] == "application/pdf"
    assert base64.b64decode(documents["report.pdf"]["source"]["data"]).startswith(b"%PDF")
    assert documents["table.csv"]["source"] == {
        "type": "text",
        "media_type": "text/plain",
        "data": "a,b\n5,6\n",
    }
    assert any(b["type"] == "text" and "'blob.bin'" in b["text"] for b in blocks)
    # The SDKs send them as they are.
    sent = _send_anthropic(
        [
            {"role": "user", "content": "files"},
            {"role": "assistant", "content": [tool_use]},
            message,
        ]
    )
    assert [b["type"] for b in sent["messages"][2]["content"][0]["content"]].count("document") == 2
    sent = _send_openai_chat(
        [
            {"role": "user", "content": "files"},
            {"role": "assistant", "tool_calls": [chat_call]},
            *dispatch(session, chat_call),
        ]
    )
    assert any(p["type"] == "file" for p in sent["messages"][3]["content"])


def test_a_refused_call_is_an_error_result_naming_the_rule(session: Session) -> None:
    block = {"type": "tool_use", "id": "t", "name": RUN_CODE, "input": {"code": "import ctypes"}}
    (message,) = dispatch(session, block)
    result = message["content"][0]
    assert result["is_error"] is True
    assert "SX202" in result["content"][0]["text"]


def test_granted_tools_go_through_the_capability_gateway_and_its_call_limit(
    session: Session,
) -> None:
    calls = [
        {"type": "tool_use", "id": f"t{i}", "name": "lookup", "input": {"key": "a"}}
        for i in range(2)
    ]
    (message,) = dispatch_many(session, calls)
    first, second = message["content"]
    assert first["is_error"] is False and "apple" in first["content"][0]["text"]
    assert second["is_error"] is True and "call limit" in second["content"][0]["text"]


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        ("{not json", "not valid JSON"),
        ("[1]", "JSON object"),
        (json.dumps({"cod": "x"}), "unknown argument"),
        (json.dumps({"code": "1", "timeout": -1}), "positive number"),
        (json.dumps({"code": "1", "timeout": "inf"}), "positive number"),
    ],
)
def test_malformed_arguments_come_back_as_an_error_result_not_an_exception(
    session: Session, arguments: str, reason: str
) -> None:
    call = {"id": "c", "type": "function", "function": {"name": RUN_CODE, "arguments": arguments}}
    (message,) = dispatch(session, call)
    assert reason in message["content"]
    assert session.statistics().steps == 0  # nothing ran


def test_a_turn_mixing_apis_is_refused_before_anything_runs(session: Session) -> None:
    calls = [
        {"type": "tool_use", "id": "t", "name": RUN_CODE, "input": {"code": "print(1)"}},
        {"type": "function_call", "call_id": "f", "name": RUN_CODE, "arguments": "{}"},
    ]
    with pytest.raises(ValueError, match="one API"):
        dispatch_many(session, calls)
    assert session.statistics().steps == 0


def test_something_that_is_no_tool_call_is_a_harness_error(session: Session) -> None:
    with pytest.raises(ValueError, match="not a tool call"):
        dispatch(session, {"type": "text", "text": "hi"})


# -- the SDK clients, offline -----------------------------------------------------------------


def _recording_client(http: Any, reply: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    """A client of ``http`` (httpx, or httpx2 for the Anthropic SDK) that records request bodies."""
    seen: list[dict[str, Any]] = []

    def handler(request: Any) -> Any:
        seen.append(json.loads(request.content))
        return http.Response(200, json=reply)

    return http.Client(transport=http.MockTransport(handler)), seen


def _send_openai_chat(messages: list[dict[str, Any]]) -> dict[str, Any]:
    reply = {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "done"},
            }
        ],
    }
    http, seen = _recording_client(httpx, reply)
    client = openai.OpenAI(api_key="offline", base_url="http://127.0.0.1:9/v1", http_client=http)
    completion = client.chat.completions.create(
        model="m", messages=messages, tools=openai_tool([lookup])
    )
    assert completion.choices[0].message.content == "done"
    return seen[0]


def _send_anthropic(messages: list[dict[str, Any]]) -> dict[str, Any]:
    reply = {
        "id": "msg",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": "done"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    http, seen = _recording_client(httpx2, reply)
    client = anthropic.Anthropic(api_key="offline", base_url="http://127.0.0.1:9", http_client=http)
    response = client.messages.create(
        model="m", max_tokens=10, messages=messages, tools=anthropic_tool([lookup])
    )
    assert response.content[0].type == "text"
    return seen[0]
