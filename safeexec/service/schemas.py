"""The wire shapes of the HTTP API (pydantic models: validated in, documented in the OpenAPI).

Requests forbid unknown fields, so a misspelt option is a 422 rather than silently ignored.
Outcomes travel as ``Outcome.to_json()`` (the library's stable form) beside a short summary.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ArtifactOut",
    "CheckIn",
    "CheckOut",
    "CrashOut",
    "CreateSessionIn",
    "DisplayOut",
    "ErrorOut",
    "FileEntryOut",
    "HealthOut",
    "LimitsIn",
    "MimeItemOut",
    "RunIn",
    "RunOut",
    "SessionOut",
]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LimitsIn(_In):
    """Limits to narrow the policy's with (each lowers the policy's value, never raises it)."""

    wall_seconds: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    cpu_seconds: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    memory_bytes: int | None = Field(default=None, gt=0)


class CreateSessionIn(_In):
    """A new session: a policy pack the server offers, a mode, narrower limits."""

    policy: str | None = Field(default=None, description="A pack name the server offers.")
    mode: str | None = Field(default=None, description="Backend; default: the policy's.")
    limits: LimitsIn | None = None


class SessionOut(BaseModel):
    session_id: str
    replica_id: str
    policy_id: str
    policy_digest: str
    mode: str
    limits: dict[str, Any]
    budget: dict[str, Any]
    steps: int


class RunIn(_In):
    """One step: either ``code`` (run as it is) or ``reply`` (a model reply to extract from)."""

    code: str | None = None
    reply: str | None = None
    timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False)


class ArtifactOut(BaseModel):
    name: str
    media_type: str
    sha256: str
    size: int
    url: str


class MimeItemOut(BaseModel):
    """One representation of a rich value; ``text`` inline for small textual types, the
    payload always at ``url``."""

    media_type: str
    sha256: str
    size: int
    text: str
    url: str


class DisplayOut(BaseModel):
    """A MIME bundle (like Jupyter's ``execute_result`` / ``display_data``)."""

    kind: str
    items: list[MimeItemOut]
    truncated: bool


class ErrorValueOut(BaseModel):
    """What the code raised, as a value (Jupyter's ``ename``/``evalue``/``traceback``): its
    class name, its message and its traceback trimmed to the model's own frames."""

    name: str
    value: str
    traceback: str


class RunOut(BaseModel):
    session_id: str
    verdict: str
    findings: list[dict[str, Any]]
    status: str | None
    exit_code: int | None
    state_lost: bool
    observation: dict[str, Any]
    artifacts: list[ArtifactOut]
    displays: list[DisplayOut]
    outcome: dict[str, Any]
    error: ErrorValueOut | None = None


class CheckIn(_In):
    """The static gate alone: nothing runs."""

    code: str
    policy: str | None = None
    mode: str | None = None


class CheckOut(BaseModel):
    verdict: str
    findings: list[dict[str, Any]]
    decision: dict[str, Any]


class FileEntryOut(BaseModel):
    name: str
    kind: str
    size: int


class HealthOut(BaseModel):
    status: str
    replica_id: str


class ErrorOut(BaseModel):
    """Every error body: a stable machine-readable ``error`` and a message saying what to do."""

    error: str
    message: str


class CrashOut(ErrorOut):
    """A 502: the worker died during the run; ``run`` is the step as recorded."""

    run: RunOut
