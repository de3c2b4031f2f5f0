"""The LangChain tool, called from tool calls a langchain-core fake chat model makes."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from safeexec.faces.langchain_tool import OUTPUT_EVENT, SafeexecTool
from safeexec.faces.tooldefs import run_code_schema
from safeexec.model.values import Outcome
from safeexec.session.session import Session

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    with Session(policy="default", mode="native", state_dir=tmp_path / "state") as s:
        yield s


def _call(code: str, call_id: str) -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": "run_code", "args": {"code": code}, "id": call_id}]
    )


def _agent(model: GenericFakeChatModel, tool: SafeexecTool, turns: int) -> list[BaseMessage]:
    """The smallest tool loop: ask the model, run its tool calls, hand back the results."""
    messages: list[BaseMessage] = [HumanMessage("go")]
    for _ in range(turns):
        reply = model.invoke(messages)
        messages.append(reply)
        assert isinstance(reply, AIMessage)
        messages.extend(tool.invoke(call) for call in reply.tool_calls)
    return messages


def test_tool_calls_run_in_one_persistent_session_with_figures_and_artifacts(
    session: Session,
) -> None:
    model = GenericFakeChatModel(
        messages=iter(
            [
                _call("import matplotlib.pyplot as plt\nxs = [1, 2, 3]\nplt.plot(xs)", "c1"),
                _call("print(sum(xs))", "c2"),
            ]
        )
    )
    messages = _agent(model, SafeexecTool(session=session), turns=2)
    first, second = (m for m in messages if isinstance(m, ToolMessage))
    assert first.tool_call_id == "c1" and first.status == "success"
    image = first.content[1]
    assert isinstance(image, dict) and image["type"] == "image"
    assert base64.b64decode(image["base64"]).startswith(PNG_MAGIC)
    assert isinstance(first.artifact["outcome"], Outcome)
    assert first.artifact["files"][0].name.endswith(".png")
    assert "6" in second.content[0]["text"]  # xs carried over


def test_refused_code_is_an_error_tool_message_naming_the_rule(session: Session) -> None:
    model = GenericFakeChatModel(messages=iter([_call("import ctypes", "c1")]))
    (_, _, result) = _agent(model, SafeexecTool(session=session), turns=1)
    assert isinstance(result, ToolMessage)
    assert result.status == "error" and "SX202" in str(result.content)


def test_the_schema_matches_the_other_faces_and_bad_arguments_are_refused(
    session: Session,
) -> None:
    tool = SafeexecTool(session=session)
    parameters = convert_to_openai_tool(tool)["function"]["parameters"]
    assert set(parameters["properties"]) == set(run_code_schema()["properties"])  # type: ignore[arg-type]
    assert parameters["required"] == ["code"]
    bad = tool.invoke(
        {"name": "run_code", "args": {"code": "1", "timeout": -1}, "id": "c", "type": "tool_call"}
    )
    assert isinstance(bad, ToolMessage) and bad.status == "error"
    assert session.statistics().steps == 0


def test_the_async_path_runs_too(session: Session) -> None:
    tool = SafeexecTool(session=session)
    result = asyncio.run(
        tool.ainvoke(
            {"name": "run_code", "args": {"code": "print(7 * 6)"}, "id": "a", "type": "tool_call"}
        )
    )
    assert isinstance(result, ToolMessage) and "42" in result.content[0]["text"]


STREAMED = "import time\nprint('first', flush=True)\ntime.sleep(0.2)\nprint('second')"


def test_output_streams_as_custom_events_before_the_result(session: Session) -> None:
    tool = SafeexecTool(session=session)
    call = {"name": "run_code", "args": {"code": STREAMED}, "id": "s1", "type": "tool_call"}

    async def events() -> list[dict[str, Any]]:
        return [e async for e in tool.astream_events(call, version="v2")]

    seen = asyncio.run(events())
    kinds = [e["event"] for e in seen]
    output = [e["data"] for e in seen if e["event"] == "on_custom_event"]
    assert all(e["name"] == OUTPUT_EVENT for e in seen if e["event"] == "on_custom_event")
    assert "".join(c["text"] for c in output).split() == ["first", "second"]
    assert {c["stream"] for c in output} == {"stdout"}
    assert kinds.index("on_custom_event") < kinds.index("on_tool_end")
    (end,) = [e for e in seen if e["event"] == "on_tool_end"]
    assert isinstance(end["data"]["output"], ToolMessage)


def test_the_sync_path_reports_output_to_callback_handlers(session: Session) -> None:
    class Recorder(BaseCallbackHandler):
        def __init__(self) -> None:
            self.chunks: list[dict[str, str]] = []

        def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
            if name == OUTPUT_EVENT:
                self.chunks.append(data)

    recorder = Recorder()
    tool = SafeexecTool(session=session)
    call = {"name": "run_code", "args": {"code": STREAMED}, "id": "s2", "type": "tool_call"}
    message = tool.invoke(call, config={"callbacks": [recorder]})
    assert message.status == "success"
    assert "".join(c["text"] for c in recorder.chunks).split() == ["first", "second"]
