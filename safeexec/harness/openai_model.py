"""A :class:`~safeexec.harness.models.Model` for OpenAI-compatible chat-completions endpoints,
through the official ``openai`` SDK (the ``model`` extra).

Base URL, model and key come from arguments or ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``. The SDK
owns the connection: timeouts, retries of rate limits (429), server errors and dropped
connections with backoff, ``Retry-After``. The key lives only in the SDK's request header: it is
kept out of ``repr``, error messages and recordings. The request sent is exactly
:func:`~safeexec.harness.models.chat_request` of the turn, so a recording's request hash names
what the endpoint was asked.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import openai

from safeexec.errors import ConfigurationError
from safeexec.harness.models import (
    Message,
    ModelError,
    Reply,
    TokenUsage,
    ToolCall,
    TurnKey,
    chat_request,
)
from safeexec.model.codec import JSONValue

__all__ = ["OpenAIModel"]


class OpenAIModel:
    """Chat completions of ``model`` at ``base_url``; ``temperature`` and ``seed`` go in every
    request (0 and 0 by default: as repeatable as the endpoint allows)."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_seconds: float = 120.0,
        max_retries: int = 4,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not key:
            raise ConfigurationError(
                "no API key: pass api_key=... or set OPENAI_API_KEY in the environment "
                "(a local server that checks none takes any value)"
            )
        if max_retries < 0:
            raise ConfigurationError(f"max_retries={max_retries!r} must be >= 0")
        self.name = f"openai:{model}"
        self.params: Mapping[str, JSONValue] = {
            "model": model,
            "temperature": temperature,
            "seed": seed,
        }
        self._client = openai.OpenAI(
            api_key=key, base_url=base_url, timeout=timeout_seconds, max_retries=max_retries
        )
        self.base_url = str(self._client.base_url).rstrip("/")

    def __repr__(self) -> str:
        return f"OpenAIModel(model={self.params['model']!r}, base_url={self.base_url!r})"

    def close(self) -> None:
        self._client.close()

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, JSONValue]] = (),
        key: TurnKey,
        max_tokens: int | None = None,
    ) -> Reply:
        request: dict[str, Any] = chat_request(self.params, messages, tools, max_tokens)
        try:
            completion = self._client.chat.completions.create(**request)
        except openai.APIStatusError as exc:
            raise ModelError(
                f"{self.name}: the endpoint answered HTTP {exc.status_code} "
                f"(after the SDK's retries): {str(exc.message)[:300]}"
            ) from None
        except openai.APIError as exc:
            raise ModelError(
                f"{self.name}: no answer (after the SDK's retries): {type(exc).__name__}: "
                f"{str(exc)[:300]}"
            ) from None
        if not completion.choices:
            raise ModelError(f"{self.name}: the endpoint's completion has no choices")
        message = completion.choices[0].message
        calls = tuple(
            ToolCall(
                id=call.id or f"call-{i}",
                name=call.function.name,
                arguments=call.function.arguments or "{}",
            )
            for i, call in enumerate(message.tool_calls or [])
            if call.type == "function"
        )
        usage = completion.usage
        return Reply(
            text=message.content or "",
            tool_calls=calls,
            usage=None
            if usage is None
            else TokenUsage(
                prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens
            ),
        )
