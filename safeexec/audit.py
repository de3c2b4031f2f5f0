"""The audit trail: one JSON line per action, appended atomically, secrets masked, read strictly.

:func:`build_event` is pure: it turns an action, its decision and its result into an
:class:`~safeexec.model.AuditEvent`. :class:`AuditLog` appends events to a JSONL file with one
``os.write`` per line on an ``O_APPEND`` descriptor (under a lock, so threads never interleave) and
raises :class:`~safeexec.errors.AuditError` when a line cannot be written; nothing is dropped
silently. Full stdout/stderr live in the :class:`~safeexec.blobs.BlobStore`; events hold
``blob://`` references.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import re
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Self, TypeVar

from safeexec import __version__
from safeexec.errors import AuditError, ConfigurationError
from safeexec.model import Action, AuditEvent, Budget, Decision, ExecResult, Usage

__all__ = [
    "DEFAULT_SECRET_PATTERNS",
    "MASK",
    "AuditLog",
    "AuditStatistics",
    "build_event",
    "mask_event",
]

# A pattern with a group named ``secret`` masks only that group (``password=`` stays readable).
DEFAULT_SECRET_PATTERNS: tuple[str, ...] = (
    r"\bsk-[A-Za-z0-9_-]{16,}",
    r"\bAKIA[0-9A-Z]{16}\b",
    r"\bgh[pousr]_[A-Za-z0-9]{36,}",
    r"\bgithub_pat_[A-Za-z0-9_]{22,}",
    r"\bxox[abprs]-[A-Za-z0-9-]{10,}",
    r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/=-]{8,})",
    r"(?i)(?<![a-z])(?:password|passwd|pwd|secret|token|api[_-]?key)"
    r"\s*[=:]\s*[\"']?(?P<secret>[^\s\"',;&]+)",
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
)

MASK = "[MASKED]"

SANDBOX_IMAGE = f"{sys.implementation.name}-{platform.python_version()}"

_T = TypeVar("_T")


def build_event(
    *,
    action: Action,
    decision: Decision,
    result: ExecResult | None,
    session_id: str,
    timestamp: datetime,
    duration_ms: float,
    budget: Budget | None = None,
    sandbox_image: str = SANDBOX_IMAGE,
    sandbox_version: str = __version__,
) -> AuditEvent:
    """Make the audit event of one action; ``result`` is ``None`` when nothing ran.

    ``timestamp`` must be timezone-aware (it is written as UTC); ``budget`` is what is left after
    this action was charged.
    """
    if timestamp.tzinfo is None or timestamp.utcoffset() is None:
        raise ConfigurationError(
            f"timestamp={timestamp!r} is naive; pass a timezone-aware datetime "
            "(e.g. datetime.now(UTC))"
        )
    return AuditEvent(
        action_id=action.action_id,
        session_id=session_id,
        timestamp=_iso_utc(timestamp),
        language=action.language,
        code_sha256=action.code_sha256,
        sandbox_image=sandbox_image,
        sandbox_version=sandbox_version,
        policy_id=decision.policy_id,
        policy_digest=decision.policy_digest,
        verdict=decision.verdict,
        findings=decision.findings,
        backend=decision.backend,
        limits=decision.limits,
        status=None if result is None else result.status,
        exit_code=None if result is None else result.exit_code,
        stdout_ref=None if result is None else result.stdout.uri,
        stderr_ref=None if result is None else result.stderr.uri,
        duration_ms=max(0.0, float(duration_ms)),
        usage=Usage() if result is None else result.usage,
        side_effects=() if result is None else result.events,
        artifacts=() if result is None else result.artifacts,
        budget=budget,
    )


def _iso_utc(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def mask_event(
    event: AuditEvent, patterns: tuple[str, ...] = DEFAULT_SECRET_PATTERNS
) -> AuditEvent:
    """Mask every substring matching ``patterns`` in the event's free-text fields.

    Returns the event with the masked fields' paths (``findings[0].evidence``) added to
    ``masked_fields``. Only plain ``str`` fields are touched: enums and numbers keep their meaning.
    """
    return _mask(event, _compile(patterns))


def _mask(event: AuditEvent, patterns: tuple[re.Pattern[str], ...]) -> AuditEvent:
    masked: list[str] = []
    out = _mask_value(event, "", patterns, masked)
    if not masked:
        return event
    merged = tuple(dict.fromkeys((*event.masked_fields, *masked)))
    return dataclasses.replace(out, masked_fields=merged)


def _mask_value(value: _T, path: str, patterns: tuple[re.Pattern[str], ...], out: list[str]) -> _T:
    if type(value) is str:
        text = str(value)
        for pattern in patterns:
            text = pattern.sub(_masker, text)
        if text != value:
            out.append(path)
        return text  # type: ignore[return-value]
    if isinstance(value, tuple):
        return tuple(  # type: ignore[return-value]
            _mask_value(item, f"{path}[{i}]", patterns, out) for i, item in enumerate(value)
        )
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for field in dataclasses.fields(value):
            if field.name == "masked_fields":
                continue
            old = getattr(value, field.name)
            new = _mask_value(old, f"{path}.{field.name}" if path else field.name, patterns, out)
            if new is not old:
                changes[field.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    return value


def _masker(match: re.Match[str]) -> str:
    if "secret" in match.re.groupindex and match.group("secret") is not None:
        start, end = match.span("secret")
        whole_start = match.start()
        text = match.group(0)
        return text[: start - whole_start] + MASK + text[end - whole_start :]
    return MASK


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditStatistics:
    """Counters of one :class:`AuditLog` since it was opened."""

    events_written: int
    bytes_written: int
    events_masked: int


class AuditLog:
    """An append-only JSONL audit log; :meth:`write` either lands the whole line or raises.

    ``fsync=True`` makes every line durable before :meth:`write` returns. ``mask_patterns`` are
    regular expressions of secrets to mask in events (a ``secret`` group masks just that part).
    """

    def __init__(
        self,
        path: Path,
        *,
        fsync: bool = False,
        mask_patterns: tuple[str, ...] = DEFAULT_SECRET_PATTERNS,
    ) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self._patterns = _compile(mask_patterns)
        self._lock = threading.Lock()
        self._events = 0
        self._bytes = 0
        self._masked = 0
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd: int | None = os.open(
                self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600
            )
        except OSError as exc:
            raise ConfigurationError(
                f"cannot open audit log path={str(path)!r}: {exc.strerror}; "
                "pass a writable file path"
            ) from exc

    def write(self, event: AuditEvent) -> AuditEvent:
        """Mask, encode and append one event; returns the event exactly as written.

        Raises :class:`~safeexec.errors.AuditError` if the line could not be written in full.
        """
        event = _mask(event, self._patterns)
        try:
            line = json.dumps(event.to_json(), ensure_ascii=True, allow_nan=False) + "\n"
        except (TypeError, ValueError) as exc:
            raise AuditError(
                f"cannot encode audit event action_id={event.action_id!r}: {exc}"
            ) from exc
        data = line.encode("ascii")
        with self._lock:
            if self._fd is None:
                raise AuditError(
                    f"audit log path={str(self.path)!r} is closed; open a new AuditLog to write"
                )
            try:
                written = os.write(self._fd, data)
                if written != len(data):
                    # Terminate the torn line so the next event starts on a line of its own.
                    os.write(self._fd, b"\n")
                    raise AuditError(
                        f"short write to audit log path={str(self.path)!r}: {written} of "
                        f"{len(data)} bytes of action_id={event.action_id!r}"
                    )
                if self.fsync:
                    os.fsync(self._fd)
            except OSError as exc:
                raise AuditError(
                    f"cannot write audit event action_id={event.action_id!r} to "
                    f"path={str(self.path)!r}: {exc.strerror or exc}"
                ) from exc
            self._events += 1
            self._bytes += len(data)
            self._masked += bool(event.masked_fields)
        return event

    def read(self) -> tuple[AuditEvent, ...]:
        """Every event in the log, decoded strictly (a malformed line raises ``AuditError``)."""
        return tuple(self)

    def __iter__(self) -> Iterator[AuditEvent]:
        try:
            handle = self.path.open("rb")
        except OSError as exc:
            raise AuditError(f"cannot read audit log path={str(self.path)!r}: {exc}") from exc
        with handle:
            for number, raw in enumerate(handle, start=1):
                try:
                    data = json.loads(raw)
                    yield AuditEvent.from_json(data)
                except ValueError as exc:  # JSONDecodeError and strict-decode errors alike
                    raise AuditError(f"{self.path}:{number}: malformed audit event: {exc}") from exc

    def statistics(self) -> AuditStatistics:
        with self._lock:
            return AuditStatistics(
                events_written=self._events, bytes_written=self._bytes, events_masked=self._masked
            )

    def close(self) -> None:
        """Close the file; idempotent. Later writes raise ``AuditError``."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _compile(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ConfigurationError(
                f"invalid secret pattern={pattern!r}: {exc}; pass a Python regular expression"
            ) from None
    return tuple(compiled)
