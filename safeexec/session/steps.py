"""The pure pieces of one session step: a caller's timeout checked, and the engine findings a
step records when nothing can be run (the decisions themselves are :mod:`safeexec.decide`'s).

Split out of :mod:`safeexec.session.session`, which wires them into each step.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from safeexec.audit.blobs import BlobStore
from safeexec.capabilities.gateway import ToolReply, canonical_json
from safeexec.errors import ConfigurationError
from safeexec.model.values import (
    Action,
    ActionSource,
    ExecResult,
    ExecStatus,
    Finding,
    Outcome,
    ToolCalled,
    Usage,
)
from safeexec.policy.engine_rules import CHECK_CRASHED, NO_CODE, engine_finding

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "NO_CODE_FINDING",
    "check_crashed",
    "checked_timeout",
    "no_code_action",
    "settle_abandoned",
    "tool_result",
]

_CANCEL_POLL_SECONDS = 0.05


def checked_timeout(timeout: float | None) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise ConfigurationError(
            f"timeout={timeout!r} must be a number of seconds; pass e.g. timeout=5.0"
        )
    if not math.isfinite(timeout) or timeout <= 0:
        raise ConfigurationError(
            f"timeout={timeout!r} must be a positive, finite number of seconds"
        )
    return float(timeout)


def no_code_action() -> Action:
    return Action.create("", source=ActionSource.RAW)


NO_CODE_FINDING = engine_finding(
    NO_CODE,
    "no code was found in the reply; put the code to run in a fenced block (```python ... ```)",
    evidence="",
)


def check_crashed(stage: str, exc: BaseException) -> Finding:
    return engine_finding(
        CHECK_CRASHED, f"the {stage} step crashed ({type(exc).__name__}); denying (fail closed)"
    )


async def settle_abandoned(step: asyncio.Future[Outcome], interrupt: Callable[[], None]) -> None:
    """Interrupt a step its caller stopped waiting for, until it is recorded."""
    import asyncio  # loaded by the async callers already; a one-shot run never gets here

    # Repeated until the step ends: the first request may land before the cell started.
    while not step.done():
        interrupt()
        await asyncio.wait({step}, timeout=_CANCEL_POLL_SECONDS)
    with contextlib.suppress(BaseException):
        step.result()  # the step is recorded either way; its outcome is not asked for


def tool_result(reply: ToolReply, seconds: float, blobs: BlobStore) -> ExecResult:
    """A tool-call step's result: the JSON value as stdout, the error as stderr."""
    out = canonical_json(reply.value) if reply.ok else ""
    return ExecResult(
        status=ExecStatus.OK if reply.ok else ExecStatus.ERROR,
        exit_code=None,
        stdout=blobs.put(out.encode("utf-8", "surrogatepass")),
        stderr=blobs.put(reply.error.encode("utf-8", "surrogatepass")),
        events=() if reply.event is None else (reply.event,),
        usage=Usage(wall_seconds=seconds, tool_calls=int(isinstance(reply.event, ToolCalled))),
        message=reply.error,
    )
