""" "Run code in safeexec" as a tool of the model APIs, and dispatch of the model's tool calls.

``openai_tool(api="chat" | "responses")`` and ``anthropic_tool()`` return the tool definitions
(``run_code``, plus one per granted ``ToolSpec``); :func:`dispatch` takes one tool call — an SDK
object or its plain-dict form: an OpenAI chat ``tool_calls`` entry, a Responses ``function_call``
item, an Anthropic ``tool_use`` block — runs it in a :class:`~safeexec.session.session.Session`
(``run_code`` through :meth:`Session.run`, any other name through :meth:`Session.call_tool`, the
same capability gateway sandboxed code uses) and returns what to append to the conversation, in
that API's shape. The SDKs are never imported here: their objects are read through
``model_dump()``, so the dicts these functions return are the API's own params shapes.

What the model sends is untrusted: malformed arguments become an error result it can read,
never an exception in the harness. A session whose mode runs code in the host process
(``restricted-inprocess``: not a security boundary) is the harness's mistake, not the model's:
every face refuses it with ``InProcessRefused`` unless the caller passes ``allow_in_process=True``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

from safeexec.backends.registry import refuse_in_process
from safeexec.capabilities.specs import ToolSpec
from safeexec.decide import chosen_backend
from safeexec.faces.results import File, Rendered, render
from safeexec.model.codec import JSONValue
from safeexec.session.session import Session

__all__ = [
    "RUN_CODE",
    "RUN_CODE_DESCRIPTION",
    "Api",
    "anthropic_tool",
    "code_reply",
    "dispatch",
    "dispatch_many",
    "openai_tool",
    "refuse_in_process_session",
    "run_code_arguments",
    "run_code_schema",
]

RUN_CODE = "run_code"
"""The tool's name in every face."""

RUN_CODE_DESCRIPTION = (
    "Run Python code in a sandboxed, persistent session (variables, imports and files in the "
    "working directory carry over between calls, like a notebook). `code` may be plain code or "
    "a whole reply with a fenced ```python block. The code is checked against a policy first: "
    "refused code does not run, and the result names the rule and how to fix it. Print what you "
    "need to see; the value of a last expression is shown too. New or changed files, and open "
    "matplotlib figures as PNG, come back with the result."
)


class Api(StrEnum):
    """The tool-call shapes :func:`dispatch` understands."""

    CHAT = "chat"  # OpenAI chat completions: tool_calls[] / role "tool" messages
    RESPONSES = "responses"  # OpenAI Responses: function_call / function_call_output items
    ANTHROPIC = "anthropic"  # Anthropic Messages: tool_use / tool_result blocks


def run_code_schema(*, modes: Sequence[str] = ()) -> dict[str, JSONValue]:
    """The JSON Schema of ``run_code``'s arguments (``modes``: offer a ``mode`` argument)."""
    properties: dict[str, JSONValue] = {
        "code": {"type": "string", "description": "Python code, or a reply with a code fence."},
        "timeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "Seconds for this call; narrows the policy's wall-clock limit.",
        },
    }
    if modes:
        properties["mode"] = {
            "enum": list(modes),
            "description": "Execution mode for this call (default: the server's).",
        }
    return {
        "type": "object",
        "properties": properties,
        "required": ["code"],
        "additionalProperties": False,
    }


def _definitions(tools: Sequence[ToolSpec]) -> list[tuple[str, str, dict[str, JSONValue]]]:
    defs = [(RUN_CODE, RUN_CODE_DESCRIPTION, run_code_schema())]
    defs += [(t.name, t.description, dict(t.parameters)) for t in tools]
    return defs


def openai_tool(
    tools: Sequence[ToolSpec] = (), *, api: Api | str = Api.CHAT
) -> list[dict[str, JSONValue]]:
    """The OpenAI ``tools`` list: ``run_code`` and one function per spec in ``tools``.

    ``api="chat"`` gives chat-completions ``{"type": "function", "function": {...}}`` entries,
    ``api="responses"`` the flat Responses ``{"type": "function", "name": ...}`` ones.
    """
    shape = Api(api)
    if shape is Api.ANTHROPIC:
        raise ValueError("api='anthropic' is not an OpenAI shape; call anthropic_tool()")
    out: list[dict[str, JSONValue]] = []
    for name, description, schema in _definitions(tools):
        if shape is Api.CHAT:
            function: dict[str, JSONValue] = {
                "name": name,
                "description": description,
                "parameters": schema,
            }
            out.append({"type": "function", "function": function})
        else:
            out.append(
                {
                    "type": "function",
                    "name": name,
                    "description": description,
                    "parameters": schema,
                    "strict": False,
                }
            )
    return out


def anthropic_tool(tools: Sequence[ToolSpec] = ()) -> list[dict[str, JSONValue]]:
    """The Anthropic Messages ``tools`` list: ``run_code`` and one tool per spec in ``tools``."""
    return [
        {"name": name, "description": description, "input_schema": schema}
        for name, description, schema in _definitions(tools)
    ]


# -- dispatch ----------------------------------------------------------------------------------


def refuse_in_process_session(session: Session, *, allowed: bool, face: str) -> None:
    """Raise ``InProcessRefused`` if ``session``'s mode runs code in the host process and the
    caller of ``face`` did not pass ``allow_in_process=True``."""
    refuse_in_process(
        chosen_backend(session.policy, session.mode),
        allowed=allowed,
        face=face,
        option="allow_in_process=True",
    )


class _BadCall(Exception):
    """The model's call cannot be run as sent; the message goes back to the model."""


def dispatch(
    session: Session, call: object, *, allow_in_process: bool = False
) -> list[dict[str, Any]]:
    """Run one model tool call in ``session``; return what to append to the conversation.

    - chat: ``[{"role": "tool", ...}]``, then a ``user`` message with the files (chat tool
      messages carry text only): figures as ``image_url`` parts, PDFs as ``file`` parts;
    - responses: ``[{"type": "function_call_output", ...}]``, figures as ``input_image`` parts,
      PDFs as ``input_file``;
    - anthropic: ``[{"role": "user", "content": [{"type": "tool_result", ...}]}]``, figures as
      ``image`` blocks, PDFs and UTF-8 text files as ``document`` blocks (several calls of one
      turn belong in one message: :func:`dispatch_many`).

    Text files travel as text (Anthropic: a plain-text document); any other file as a line
    naming it (it stays in the workdir).

    A call that is not one of those three shapes raises ``ValueError`` (a harness bug); a
    session in an in-process mode raises ``InProcessRefused`` unless ``allow_in_process``.
    """
    refuse_in_process_session(session, allowed=allow_in_process, face="dispatch")
    api, call_id, name, raw = _read_call(call)
    rendered = _run(session, name, raw)
    return _shape(api, call_id, rendered)


def dispatch_many(
    session: Session, calls: Sequence[object], *, allow_in_process: bool = False
) -> list[dict[str, Any]]:
    """:func:`dispatch` each call of one model turn, in order, merged as the API wants it.

    Anthropic's results share one ``user`` message; chat's figures follow all tool messages.
    """
    refuse_in_process_session(session, allowed=allow_in_process, face="dispatch_many")
    read = [_read_call(call) for call in calls]  # every call understood before any runs
    apis = {api for api, *_ in read}
    if len(apis) > 1:
        raise ValueError(f"one turn's calls come from one API, got {sorted(apis)}")
    tool_parts: list[dict[str, Any]] = []
    extra: list[dict[str, Any]] = []
    for api, call_id, name, raw in read:
        shaped = _shape(api, call_id, _run(session, name, raw))
        if api is Api.ANTHROPIC:
            tool_parts.extend(shaped[0]["content"])
        else:
            tool_parts.append(shaped[0])
            extra.extend(shaped[1:])
    if apis == {Api.ANTHROPIC}:
        return [{"role": "user", "content": tool_parts}]
    if apis == {Api.CHAT} and extra:
        return [*tool_parts, _merged_user(extra)]
    return tool_parts


def _merged_user(messages: list[dict[str, Any]]) -> dict[str, Any]:
    parts = [part for message in messages for part in message["content"]]
    return {"role": "user", "content": parts}


def _read_call(call: object) -> tuple[Api, str, str, object]:
    """(api, call id, tool name, raw arguments) of an SDK object or dict, else ValueError."""
    dump = getattr(call, "model_dump", None)
    data = dump() if callable(dump) else call
    if not isinstance(data, Mapping):
        raise ValueError(
            f"a tool call must be a mapping or an SDK model, got {type(call).__name__}"
        )
    kind = data.get("type")
    if kind == "tool_use":
        return Api.ANTHROPIC, str(data.get("id")), str(data.get("name")), data.get("input")
    if kind == "function_call":
        return Api.RESPONSES, str(data.get("call_id")), str(data.get("name")), data.get("arguments")
    function = data.get("function")
    if kind == "function" and isinstance(function, Mapping):
        return Api.CHAT, str(data.get("id")), str(function.get("name")), function.get("arguments")
    raise ValueError(
        f"not a tool call of a known API (type={kind!r}); pass an OpenAI chat tool_calls entry, "
        "a Responses function_call item or an Anthropic tool_use block"
    )


def _arguments(raw: object) -> dict[str, JSONValue]:
    if isinstance(raw, str):  # the OpenAI APIs send arguments as JSON text
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise _BadCall(
                f"the arguments are not valid JSON ({exc}); send a JSON object"
            ) from None
    if not isinstance(raw, dict):
        raise _BadCall(f"the arguments must be a JSON object, got {type(raw).__name__}")
    return raw


def run_code_arguments(
    arguments: Mapping[str, object], *, modes: Sequence[str] = ()
) -> tuple[str, float | None, str | None]:
    """``(code, timeout, mode)`` from ``run_code`` arguments, or ``ValueError`` saying why not."""
    allowed = {"code", "timeout", *(("mode",) if modes else ())}
    unknown = sorted(set(arguments) - allowed)
    if unknown:
        raise ValueError(f"unknown argument(s) {unknown}; run_code takes {sorted(allowed)}")
    code = arguments.get("code")
    if not isinstance(code, str):
        raise ValueError("argument 'code' (a string of Python code) is required")
    timeout = arguments.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise ValueError(
            f"argument 'timeout' must be a positive number of seconds, got {timeout!r}"
        )
    mode = arguments.get("mode")
    if mode is not None and mode not in modes:
        raise ValueError(f"argument 'mode' must be one of {list(modes)}, got {mode!r}")
    return (
        code,
        None if timeout is None else float(timeout),
        mode if isinstance(mode, str) else None,
    )


def _run(session: Session, name: str, raw: object) -> Rendered:
    try:
        arguments = _arguments(raw)
        if name == RUN_CODE:
            try:
                code, timeout, _ = run_code_arguments(arguments)
            except ValueError as exc:
                raise _BadCall(str(exc)) from None
            outcome = session.run(code_reply(code), timeout=timeout)
        else:
            outcome = session.call_tool(name, arguments)
    except _BadCall as exc:
        return Rendered(text=f"[not run: {exc}]", is_error=True)
    return render(outcome, session.blobs)


_FENCE_LINE = re.compile(r"^[ \t]*(```|~~~)", re.M)


def code_reply(code: str) -> str:
    """``run_code``'s ``code`` as the reply ``Session.run`` reads: text with a fence line is a
    model reply (extracted like any), anything else is the code itself, fenced as Python (so a
    bare ``x`` runs and shows x)."""
    if _FENCE_LINE.search(code):
        return code
    return f"```python\n{code}\n```"


def _shape(api: Api, call_id: str, rendered: Rendered) -> list[dict[str, Any]]:
    text = rendered.text
    files = rendered.files
    if api is Api.CHAT:
        tool_message: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": text}
        if not files:
            return [tool_message]
        parts: list[dict[str, Any]] = [
            {"type": "text", "text": f"Files from tool call {call_id}:"},
            *(_chat_part(f) for f in files),
        ]
        return [tool_message, {"role": "user", "content": parts}]
    if api is Api.RESPONSES:
        output: str | list[dict[str, Any]] = text
        if files:
            output = [{"type": "input_text", "text": text}, *(_responses_part(f) for f in files)]
        return [{"type": "function_call_output", "call_id": call_id, "output": output}]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
    blocks += [_anthropic_block(f) for f in files]
    result = {
        "type": "tool_result",
        "tool_use_id": call_id,
        "content": blocks,
        "is_error": rendered.is_error,
    }
    return [{"role": "user", "content": [result]}]


# Each API's content for one file: images as its image content, PDFs as its file/document
# content, UTF-8 text as text (Anthropic: a plain-text document), anything else as a text
# reference (no API takes arbitrary binary content; the file stays in the workdir).
_PDF = "application/pdf"


def _reference(file: File) -> str:
    return (
        f"[file {file.name!r} ({file.media_type}, {len(file.data)} bytes) is in the "
        "session's working directory; its content is not attached]"
    )


def _as_text(file: File, text: str) -> str:
    return f"File {file.name!r} ({file.media_type}):\n{text}"


def _chat_part(file: File) -> dict[str, Any]:
    if file.is_image:
        return {"type": "image_url", "image_url": {"url": file.data_url}}
    if file.media_type == _PDF:
        return {"type": "file", "file": {"file_data": file.data_url, "filename": file.name}}
    text = file.text
    return {"type": "text", "text": _reference(file) if text is None else _as_text(file, text)}


def _responses_part(file: File) -> dict[str, Any]:
    if file.is_image:
        return {"type": "input_image", "image_url": file.data_url}
    if file.media_type == _PDF:
        return {"type": "input_file", "file_data": file.data_url, "filename": file.name}
    text = file.text
    return {
        "type": "input_text",
        "text": _reference(file) if text is None else _as_text(file, text),
    }


def _anthropic_block(file: File) -> dict[str, Any]:
    if file.is_image:
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": file.media_type, "data": file.base64},
        }
    if file.media_type == _PDF:
        return {
            "type": "document",
            "source": {"type": "base64", "media_type": _PDF, "data": file.base64},
            "title": file.name,
        }
    text = file.text
    if text is None:
        return {"type": "text", "text": _reference(file)}
    return {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": text},
        "title": file.name,
    }
