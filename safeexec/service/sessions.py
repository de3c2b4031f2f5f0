"""The registry of live sessions: who owns each, whether it is in use, when it was last used.

A session belongs to the token that created it. :meth:`SessionRegistry.get` answers a missing
id and another token's id the same way (``SessionNotFound``, a 404), so a client cannot learn
that someone else's session exists. The registry lives on the event loop's thread; closing a
session (which kills its processes) is left to the caller, off the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from safeexec.model.values import BlobRef, Outcome
from safeexec.service.events import EventHub
from safeexec.session.session import Session

__all__ = ["TEXT_MEDIA_TYPE", "SessionNotFound", "SessionRecord", "SessionRegistry"]

TEXT_MEDIA_TYPE = "text/plain; charset=utf-8"
"""The media type of captured stdout and stderr."""


class SessionNotFound(Exception):
    """No session with that id belongs to the asking token (it may not exist at all)."""


@dataclass(slots=True, kw_only=True, eq=False)
class SessionRecord:
    """One live session and the service's bookkeeping about it (mutable, loop-thread only)."""

    session_id: str
    owner: str
    session: Session
    mode: str
    last_used: float
    run_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    active: int = 0
    running: bool = False
    stopped: bool = False
    """The host interrupted or closed the running cell (its kill is no crash)."""
    closing: bool = False
    """Being closed: its id is a 404 already; forgotten once its last CPU is charged."""
    steps: int = 0
    blobs: dict[str, tuple[BlobRef, str]] = field(default_factory=dict)
    """The blobs this session's outcomes referred to, each with its recorded media type."""
    events: EventHub = field(default_factory=EventHub)

    def remember(self, outcome: Outcome) -> None:
        """Let this session's owner fetch the blobs ``outcome`` refers to (and nothing else),
        each served as the media type the outcome recorded for it."""
        result = outcome.result
        if result is None:
            return
        for ref in (result.stdout, result.stderr):
            self.blobs[ref.sha256] = (ref, TEXT_MEDIA_TYPE)
        for artifact in result.artifacts:
            self.blobs[artifact.blob.sha256] = (artifact.blob, artifact.media_type)
        for display in result.displays:
            for item in display.items:
                self.blobs[item.blob.sha256] = (item.blob, item.media_type)


class SessionRegistry:
    """Live sessions by id, with ownership checks and idle bookkeeping."""

    def __init__(self, *, clock: Callable[[], float]) -> None:
        self._records: dict[str, SessionRecord] = {}
        self._clock = clock

    def __len__(self) -> int:
        return len(self._records)

    def add(self, record: SessionRecord) -> None:
        self._records[record.session_id] = record

    def get(self, owner: str, session_id: str) -> SessionRecord:
        """The owner's live session ``session_id``; ``SessionNotFound`` for anything else."""
        record = self._records.get(session_id)
        if record is None or record.owner != owner or record.closing:
            raise SessionNotFound(session_id)
        return record

    def owned_by(self, owner: str) -> tuple[SessionRecord, ...]:
        return tuple(r for r in self._records.values() if r.owner == owner and not r.closing)

    def forget(self, record: SessionRecord) -> None:
        """Remove ``record``: it is closed and its last CPU charged (lookups of its id have been
        404s since it was marked ``closing``)."""
        self._records.pop(record.session_id, None)

    @contextlib.contextmanager
    def in_use(self, record: SessionRecord) -> Iterator[SessionRecord]:
        """Mark ``record`` busy for the block (the idle sweep leaves it alone), then touch it."""
        record.active += 1
        try:
            yield record
        finally:
            record.active -= 1
            record.last_used = self._clock()

    def idle(self, idle_seconds: float) -> tuple[SessionRecord, ...]:
        """Sessions nobody has used for ``idle_seconds`` and nobody is using now."""
        now = self._clock()
        return tuple(
            r
            for r in self._records.values()
            if r.active == 0
            and not r.running
            and not r.closing
            and now - r.last_used >= idle_seconds
        )

    def all(self) -> tuple[SessionRecord, ...]:
        """Every session not being closed."""
        return tuple(r for r in self._records.values() if not r.closing)
