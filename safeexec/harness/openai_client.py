"""A :class:`~safeexec.harness.models.Model` for OpenAI-compatible chat-completions endpoints.

Base URL, model and key come from arguments or ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``. The key
lives only in the request header: it is kept out of ``repr``, error messages and recordings.
Rate limits (429) and server errors (5xx), timeouts and dropped connections are retried with
exponential backoff (``Retry-After`` honoured, capped); ``sleep`` is injectable so tests never wait.
With ``stream=True`` the reply is read as server-sent events and its deltas are joined.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

import httpx

from safeexec.errors import ConfigurationError
from safeexec.harness.models import Message, ModelError, Reply, TokenUsage, ToolCall, TurnKey
from safeexec.model.codec import JSONValue

__all__ = ["OpenAIModel"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})


class OpenAIModel:
    """Chat completions over ``httpx``; ``transport`` lets tests swap the network out."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_seconds: float = 60.0,
        max_retries: int = 4,
        backoff_seconds: float = 0.5,
        max_backoff_seconds: float = 30.0,
        stream: bool = False,
        temperature: float | None = 0.0,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not key:
            raise ConfigurationError(
                "no API key: pass api_key=... or set OPENAI_API_KEY in the environment"
            )
        if max_retries < 0:
            raise ConfigurationError(f"max_retries={max_retries!r} must be >= 0")
        self.name = f"openai:{model}"
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip(
            "/"
        )
        self._stream = stream
        self._temperature = temperature
        self._max_retries = max_retries
        self._backoff = backoff_seconds
        self._max_backoff = max_backoff_seconds
        self._sleep = sleep
        self._client = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {key}"},
            timeout=httpx.Timeout(timeout_seconds),
            transport=transport,
        )
        self.retries = 0

    def __repr__(self) -> str:
        return f"OpenAIModel(model={self.model!r}, base_url={self.base_url!r})"

    def close(self) -> None:
        self._client.close()

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, JSONValue]] = (),
        key: TurnKey,
    ) -> Reply:
        body: dict[str, JSONValue] = {
            "model": self.model,
            "messages": [_message_json(m) for m in messages],
        }
        if self._temperature is not None:
            body["temperature"] = self._temperature
        if tools:
            body["tools"] = [{"type": "function", "function": dict(t)} for t in tools]
        if self._stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        for attempt in range(self._max_retries + 1):
            last = attempt == self._max_retries
            try:
                return self._attempt(body)
            except _Retryable as exc:
                if last:
                    raise ModelError(
                        f"{self.name}: giving up after {attempt + 1} attempt(s): {exc}"
                    ) from None
                self.retries += 1
                self._sleep(self._delay(attempt, exc.retry_after))
        raise AssertionError("unreachable")  # pragma: no cover

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self._max_backoff)
        return float(min(self._backoff * 2**attempt, self._max_backoff))

    def _attempt(self, body: Mapping[str, JSONValue]) -> Reply:
        try:
            if self._stream:
                with self._client.stream("POST", "/chat/completions", json=body) as response:
                    _raise_for(response, streamed=True)
                    return _read_stream(response.iter_lines())
            response = self._client.post("/chat/completions", json=body)
            _raise_for(response, streamed=False)
            return _read_completion(response)
        except httpx.TimeoutException as exc:
            raise _Retryable(f"timed out ({type(exc).__name__})") from None
        except httpx.TransportError as exc:
            raise _Retryable(f"connection failed ({type(exc).__name__})") from None


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _raise_for(response: httpx.Response, *, streamed: bool) -> None:
    status = response.status_code
    if status < 400:
        return
    if streamed:
        response.read()
    detail = response.text[:300]
    if status in _RETRY_STATUSES:
        raise _Retryable(f"HTTP {status}: {detail}", _retry_after(response))
    raise ModelError(f"endpoint answered HTTP {status}: {detail}")


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return None if value is None else float(value)
    except ValueError:
        return None


def _message_json(message: Message) -> dict[str, JSONValue]:
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


def _read_completion(response: httpx.Response) -> Reply:
    try:
        data = response.json()
        message = data["choices"][0]["message"]
        calls = tuple(
            ToolCall(
                id=str(c.get("id") or f"call-{i}"),
                name=str(c["function"]["name"]),
                arguments=str(c["function"].get("arguments") or "{}"),
            )
            for i, c in enumerate(message.get("tool_calls") or [])
        )
        return Reply(text=message.get("content") or "", tool_calls=calls, usage=_usage(data))
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ModelError(f"the endpoint's reply is not a chat completion: {exc!r}") from None


def _usage(data: Mapping[str, object]) -> TokenUsage | None:
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return None
    return TokenUsage(
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
    )


def _read_stream(lines: Iterator[str]) -> Reply:
    """Join the deltas of a server-sent-event stream into one reply."""
    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    usage: TokenUsage | None = None
    try:
        for line in lines:
            if not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                break
            chunk = json.loads(payload)
            usage = _usage(chunk) or usage
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    text.append(delta["content"])
                for part in delta.get("tool_calls") or []:
                    slot = calls.setdefault(int(part.get("index", 0)), {"id": "", "name": ""})
                    slot["id"] = part.get("id") or slot["id"]
                    function = part.get("function") or {}
                    slot["name"] += function.get("name") or ""
                    slot["arguments"] = slot.get("arguments", "") + (
                        function.get("arguments") or ""
                    )
    except (ValueError, TypeError, AttributeError) as exc:
        raise ModelError(f"the endpoint's stream is not chat-completion chunks: {exc!r}") from None
    tool_calls = tuple(
        ToolCall(
            id=slot["id"] or f"call-{index}",
            name=slot["name"],
            arguments=slot.get("arguments") or "{}",
        )
        for index, slot in sorted(calls.items())
    )
    return Reply(text="".join(text), tool_calls=tool_calls, usage=usage)
