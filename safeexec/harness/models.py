"""The model seam: messages in, a reply (text and/or tool calls, token usage) out.

A :class:`Model` is anything with ``complete(messages, *, tools, key)``. Three come with the
harness: :class:`ScriptedModel` (a seeded policy function, for the scripted agents),
:class:`ReplayModel` (recorded assistant turns keyed by task, format and turn) and, in
:mod:`safeexec.harness.openai_client`, a client for OpenAI-compatible endpoints.
:class:`RecordingModel` wraps any model and appends every reply to a recording file that
:class:`ReplayModel` reads back. Recordings hold replies only, never request headers or keys.
"""

from __future__ import annotations

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
    """Anything that answers a conversation. ``tools`` are OpenAI-style function schemas."""

    name: str

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, JSONValue]] = (),
        key: TurnKey,
    ) -> Reply: ...


Policy = Callable[[Sequence[Message], TurnKey, random.Random], Reply]
"""A scripted model's brain: the conversation so far, the turn, a seeded RNG → the reply."""


class ScriptedModel:
    """A deterministic model driven by ``policy``; the RNG is seeded from ``seed`` and the key."""

    def __init__(self, policy: Policy, *, name: str = "scripted", seed: int = 0) -> None:
        self.name = name
        self._policy = policy
        self._seed = seed

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, JSONValue]] = (),
        key: TurnKey,
    ) -> Reply:
        rng = random.Random(f"{self._seed}:{key.task}:{key.format}:{key.turn}")
        return self._policy(messages, key, rng)


def _key_text(key: TurnKey) -> str:
    return f"{key.task}\x00{key.format}\x00{key.turn}"


class ReplayModel:
    """Recorded assistant turns played back; a turn that was never recorded is a ``ModelError``."""

    def __init__(self, path: Path) -> None:
        self.name = f"replay:{path}"
        self._replies: dict[str, Reply] = {}
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
                self._replies[_key_text(key)] = Reply.from_json(data["reply"])
            except (ValueError, KeyError, TypeError, AssertionError) as exc:
                raise ConfigurationError(
                    f"recording {str(path)!r} line {number} is not a recorded turn: {exc!r}; "
                    "expected {'task', 'format', 'turn', 'reply'}"
                ) from exc

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, JSONValue]] = (),
        key: TurnKey,
    ) -> Reply:
        reply = self._replies.get(_key_text(key))
        if reply is None:
            raise ModelError(
                f"no recorded turn for task={key.task!r} format={key.format!r} turn={key.turn}"
            )
        return reply


class RecordingModel:
    """Wraps ``model`` and appends each reply, keyed by task, format and turn, to ``path``."""

    def __init__(self, model: Model, path: Path) -> None:
        self.name = model.name
        self._model = model
        self.path = Path(path)
        self._lock = threading.Lock()

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, JSONValue]] = (),
        key: TurnKey,
    ) -> Reply:
        reply = self._model.complete(messages, tools=tools, key=key)
        line = {"task": key.task, "format": key.format, "turn": key.turn, "reply": reply.to_json()}
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(line, sort_keys=True) + "\n")
        return reply
