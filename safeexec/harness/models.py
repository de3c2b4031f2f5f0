"""The model seam: messages in, a reply (text and/or tool calls, token usage) out.

A :class:`Model` is anything with ``params`` and ``complete(messages, *, tools, key,
max_tokens)``. Three come with the harness: :class:`ScriptedModel` (a seeded policy function, for
the scripted agents), :class:`ReplayModel` (recorded assistant turns) and, in
:mod:`safeexec.harness.openai_model`, OpenAI-compatible endpoints through the official SDK.

Every turn is one chat-completions request, :func:`chat_request` (the model's ``params`` with the
messages, tools and ``max_tokens``), named by :func:`request_sha256` (SHA-256 of its canonical
JSON). :class:`RecordingModel` appends each reply with its request's hash and the model's params;
:class:`ReplayModel` answers a turn only when the request it is asked is the recorded one, bit for
bit, so a replayed run is the recorded run or a ``ModelError``. Recordings hold replies, hashes
and params only, never request headers or keys.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from safeexec.errors import ConfigurationError, SafeExecError
from safeexec.model.codec import JSONValue

__all__ = [
    "Message",
    "Model",
    "ModelError",
    "RecordingModel",
    "ReplayModel",
    "Reply",
    "ScriptedModel",
    "TokenUsage",
    "ToolCall",
    "TurnKey",
    "chat_request",
    "request_sha256",
]


class ModelError(SafeExecError):
    """The model could not produce a reply (endpoint unreachable, retries spent, bad response)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One function call the model asked for; ``arguments`` is its JSON text, unparsed."""

    id: str
    name: str
    arguments: str

    def to_json(self) -> dict[str, JSONValue]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_json(cls, data: Mapping[str, JSONValue]) -> ToolCall:
        return cls(id=str(data["id"]), name=str(data["name"]), arguments=str(data["arguments"]))


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenUsage:
    """Tokens one reply cost, as the endpoint reported them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """One assistant turn: text, tool calls, and token usage when known."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: TokenUsage | None = None

    def to_json(self) -> dict[str, JSONValue]:
        usage: JSONValue = None
        if self.usage is not None:
            usage = {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
            }
        return {
            "text": self.text,
            "tool_calls": [c.to_json() for c in self.tool_calls],
            "usage": usage,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, JSONValue]) -> Reply:
        calls = data.get("tool_calls") or []
        usage = data.get("usage")
        assert isinstance(calls, list)
        return cls(
            text=str(data.get("text") or ""),
            tool_calls=tuple(ToolCall.from_json(c) for c in calls if isinstance(c, dict)),
            usage=TokenUsage(
                prompt_tokens=int(usage.get("prompt_tokens") or 0),  # type: ignore[arg-type]
                completion_tokens=int(usage.get("completion_tokens") or 0),  # type: ignore[arg-type]
            )
            if isinstance(usage, dict)
            else None,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One chat message: ``system``, ``user``, ``assistant`` (maybe with tool calls) or ``tool``."""

    role: str
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnKey:
    """Which turn a model is asked for: task, action format and turn number (0-based)."""

    task: str
    format: str
    turn: int


class Model(Protocol):
    """Anything that answers a conversation. ``tools`` are OpenAI-style function schemas;
    ``max_tokens`` caps the reply's completion tokens (``None``: the model's own limit);
    ``params`` are the request's other fields (``model``, sampling), as :func:`chat_request`
    puts them in every request."""

    name: str
    params: Mapping[str, JSONValue]

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, JSONValue]] = (),
        key: TurnKey,
        max_tokens: int | None = None,
    ) -> Reply: ...


def _message_json(message: Message) -> dict[str, JSONValue]:
    """One message as the chat-completions API takes it."""
    out: dict[str, JSONValue] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    return out


def chat_request(
    params: Mapping[str, JSONValue],
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, JSONValue]],
    max_tokens: int | None,
) -> dict[str, JSONValue]:
    """The chat-completions request body of one turn (what an endpoint is sent)."""
    request: dict[str, JSONValue] = {
        **params,
        "messages": [_message_json(m) for m in messages],
    }
    if tools:
        request["tools"] = [{"type": "function", "function": dict(t)} for t in tools]
        # OpenAI's default, said outright: some compatible servers (llama.cpp's
        # chatml-function-calling) leave the tools out of the prompt without it.
        request["tool_choice"] = "auto"
    if max_tokens is not None:
        request["max_tokens"] = max_tokens
    return request


def request_sha256(request: Mapping[str, JSONValue]) -> str:
    """SHA-256 of ``request``'s canonical JSON (sorted keys, no spaces, UTF-8)."""
    text = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


Policy = Callable[[Sequence[Message], TurnKey, random.Random], Reply]
"""A scripted model's brain: the conversation so far, the turn, a seeded RNG → the reply."""


class ScriptedModel:
    """A deterministic model driven by ``policy``; the RNG is seeded from ``seed`` and the key."""

    def __init__(self, policy: Policy, *, name: str = "scripted", seed: int = 0) -> None:
        self.name = name
        self.params: Mapping[str, JSONValue] = {"model": name, "seed": seed}
        self._policy = policy
        self._seed = seed

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, JSONValue]] = (),
        key: TurnKey,
        max_tokens: int | None = None,
    ) -> Reply:
        rng = random.Random(f"{self._seed}:{key.task}:{key.format}:{key.turn}")
        return self._policy(messages, key, rng)


def _key_text(key: TurnKey) -> str:
    return f"{key.task}\x00{key.format}\x00{key.turn}"


@dataclass(frozen=True, slots=True)
class _Recorded:
    request_sha256: str
    reply: Reply


class ReplayModel:
    """Recorded assistant turns played back, each only for the request it was recorded for.

    The recorded model's name and params (its model id, sampling) are this model's, so a replayed
    run names the model that made it and a replayed turn's request is rebuilt exactly; a turn
    never recorded, or asked with a request whose hash differs from the recorded one (the
    conversation, tools or ``max_tokens`` changed), is a ``ModelError``.
    """

    def __init__(self, path: Path) -> None:
        self._turns: dict[str, _Recorded] = {}
        model: tuple[str, dict[str, JSONValue]] | None = None
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ConfigurationError(f"cannot read recording path={str(path)!r}: {exc}") from exc
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                key = TurnKey(task=data["task"], format=data["format"], turn=int(data["turn"]))
                recorded = _Recorded(str(data["request_sha256"]), Reply.from_json(data["reply"]))
                line_model = (str(data["model"]), dict(data["params"]))
            except (ValueError, KeyError, TypeError, AssertionError) as exc:
                raise ConfigurationError(
                    f"recording {str(path)!r} line {number} is not a recorded turn: {exc!r}; "
                    "expected {'task', 'format', 'turn', 'model', 'params', 'request_sha256', "
                    "'reply'}"
                ) from exc
            if model is not None and line_model != model:
                raise ConfigurationError(
                    f"recording {str(path)!r} line {number} was made by {line_model!r}, not "
                    f"{model!r}: one recording file holds one model"
                )
            model = line_model
            self._turns[_key_text(key)] = recorded
        self.name, params = model or (f"replay:{path}", {})
        self.params: Mapping[str, JSONValue] = params

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, JSONValue]] = (),
        key: TurnKey,
        max_tokens: int | None = None,
    ) -> Reply:
        recorded = self._turns.get(_key_text(key))
        if recorded is None:
            raise ModelError(
                f"no recorded turn for task={key.task!r} format={key.format!r} turn={key.turn}"
            )
        asked = request_sha256(chat_request(self.params, messages, tools, max_tokens))
        if asked != recorded.request_sha256:
            raise ModelError(
                f"task={key.task!r} format={key.format!r} turn={key.turn}: the request "
                f"(sha256 {asked[:12]}) is not the recorded one ({recorded.request_sha256[:12]}); "
                "the conversation, tools or max_tokens differ from the recording"
            )
        return recorded.reply


class RecordingModel:
    """Wraps ``model`` and appends each reply, with its turn, the model's name and params and
    the request's SHA-256, to ``path``."""

    def __init__(self, model: Model, path: Path) -> None:
        self.name = model.name
        self.params = model.params
        self._model = model
        self.path = Path(path)
        self._lock = threading.Lock()

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, JSONValue]] = (),
        key: TurnKey,
        max_tokens: int | None = None,
    ) -> Reply:
        reply = self._model.complete(messages, tools=tools, key=key, max_tokens=max_tokens)
        line = {
            "task": key.task,
            "format": key.format,
            "turn": key.turn,
            "model": self.name,
            "params": dict(self.params),
            "request_sha256": request_sha256(
                chat_request(self.params, messages, tools, max_tokens)
            ),
            "reply": reply.to_json(),
        }
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(line, sort_keys=True) + "\n")
        return reply
