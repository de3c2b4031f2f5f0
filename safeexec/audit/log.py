"""The audit trail: one JSON line per action, hash-chained, appended atomically, read strictly.

:func:`build_event` is pure: it turns an action, its decision and its result into an
:class:`~safeexec.model.values.AuditEvent`. :class:`AuditLog` appends events to a JSONL file with
one ``os.write`` per line on an ``O_APPEND`` descriptor and raises
:class:`~safeexec.errors.AuditError` when a line cannot be written; nothing is dropped silently.
Full stdout/stderr live in the :class:`~safeexec.audit.blobs.BlobStore`; events hold ``blob://``
references.

The log is tamper-evident. Event *n* carries ``sequence = n`` and ``prev_sha256``, the sha256 of
line *n - 1* as written (for the first, the log's random genesis value). The chain head (genesis,
event count, last line's sha256, byte size) is kept outside the log, in ``<log>.head``: a 512-byte
record rewritten in place by one ``pwrite`` after every append, under the ``flock`` that every
writer and reader takes (threads and processes alike), so no reader sees it half-written and the
chain never forks; a head torn by a crash is reported, never taken as valid.

Before and after every append the open descriptor is compared with what the log's name holds now
(device, inode, link count, size, owner and mode): an append into an unlinked, replaced or
truncated file raises. :meth:`AuditLog.read` and :func:`verify_log` (``safeexec log verify``)
walk the chain and compare it with the head: a deleted, inserted, moved or rewritten event, a
truncated log and a swapped file are each reported. Anyone able to rewrite both the log *and* its
head can forge a history; the state dir being the host's alone (0700, apart from every workdir)
is what prevents that.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import hashlib
import json
import os
import platform
import re
import secrets
import stat
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from types import TracebackType
from typing import Self, TypeVar

from safeexec import __version__
from safeexec.audit.statedir import (
    create_file_once,
    open_private_dir,
    owner_and_mode,
    read_file,
)
from safeexec.errors import AuditError, ConfigurationError
from safeexec.model.codec import JSONValue, field_names
from safeexec.model.fieldwise import Fieldwise
from safeexec.model.values import Action, AuditEvent, Budget, Decision, ExecResult, Usage

__all__ = [
    "DEFAULT_SECRET_PATTERNS",
    "HEAD_SUFFIX",
    "MASK",
    "AuditLog",
    "AuditStatistics",
    "LogVerification",
    "build_event",
    "mask_event",
    "read_log",
    "verify_log",
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
    environment_ref: str | None = None,
    seed: int | None = None,
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
        environment_ref=environment_ref,
        seed=seed,
        error=None if result is None else result.error,
        rung=None if result is None else result.rung,
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
    cls = type(value)
    if cls is str:
        text = str(value)
        for pattern in patterns:
            text = pattern.sub(_masker, text)
        if text != value:
            out.append(path)
        return text  # type: ignore[return-value]
    if value is None or cls is int or cls is float or cls is bool or isinstance(value, Enum):
        return value
    if isinstance(value, tuple | list):
        items = [_mask_value(item, f"{path}[{i}]", patterns, out) for i, item in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)  # type: ignore[return-value]
    if isinstance(value, dict):  # JSON records (the harness's turns); keys are kept as they are
        return {  # type: ignore[return-value]
            k: _mask_value(v, f"{path}.{k}" if path else str(k), patterns, out)
            for k, v in value.items()
        }
    names = field_names(cls)
    if names is not None:
        changes = {}
        for name in names:
            if name == "masked_fields":
                continue
            old = getattr(value, name)
            new = _mask_value(old, f"{path}.{name}" if path else name, patterns, out)
            if new is not old:
                changes[name] = new
        return dataclasses.replace(value, **changes) if changes else value  # type: ignore[type-var]
    return value


def _masker(match: re.Match[str]) -> str:
    if "secret" in match.re.groupindex and match.group("secret") is not None:
        start, end = match.span("secret")
        whole_start = match.start()
        text = match.group(0)
        return text[: start - whole_start] + MASK + text[end - whole_start :]
    return MASK


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class AuditStatistics(Fieldwise):
    """Counters of one :class:`AuditLog` since it was opened."""

    events_written: int
    bytes_written: int
    events_masked: int


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class LogVerification(Fieldwise):
    """What :func:`verify_log` found: ``ok`` with the event count, or the first reason it is not."""

    path: Path
    ok: bool
    events: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class _Head(Fieldwise):
    """The chain head kept beside the log: what the log must end with."""

    genesis: str
    count: int
    last_sha256: str
    size_bytes: int

    def encode(self) -> bytes:
        """A fixed-size record (JSON padded with spaces), so it is rewritten in place."""
        data = {"format": _HEAD_FORMAT, **dataclasses.asdict(self)}
        text = json.dumps(data, sort_keys=True).encode("ascii")
        return text.ljust(_HEAD_BYTES - 1) + b"\n"

    @classmethod
    def decode(cls, raw: bytes, label: str) -> _Head:
        try:
            data = json.loads(raw)
            if not isinstance(data, dict) or data.pop("format", None) != _HEAD_FORMAT:
                raise ValueError(f"not a {_HEAD_FORMAT} file")
            head = cls(**data)
            ok = (
                _HEX64.fullmatch(str(head.genesis))
                and _HEX64.fullmatch(str(head.last_sha256))
                and type(head.count) is int
                and type(head.size_bytes) is int
                and head.count >= 0
                and head.size_bytes >= 0
            )
            if not ok:
                raise ValueError("a field has the wrong type or value")
        except (TypeError, ValueError) as exc:
            raise AuditError(f"{label}: malformed chain head: {exc}") from exc
        return head


HEAD_SUFFIX = ".head"
"""The chain head of ``audit.jsonl`` is ``audit.jsonl.head``, in the same directory."""

_HEAD_FORMAT = "safeexec-audit-head/1"
_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEAD_BYTES = 512  # one sector: the in-place update is a single aligned write


class AuditLog:
    """An append-only, hash-chained JSONL audit log; :meth:`write` either lands the line or raises.

    ``path``'s directory must be a real directory owned by this uid and writable by no one else;
    the log and its head are opened through a descriptor of it and never through a symlink.
    ``fsync=True`` makes every line durable before :meth:`write` returns. ``mask_patterns`` are
    regular expressions of secrets to mask in events (a ``secret`` group masks just that part).
    Before its first append a writer checks the log's end against the head (size, last line's
    hash) and raises ``AuditError`` if they differ; the whole chain is checked by :meth:`read`.
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
        self._name = self.path.name
        self._head_name = self._name + HEAD_SUFFIX
        self._tail_checked = False
        self._dir: int | None = open_private_dir(
            self.path.parent, what="audit log directory", tighten=False
        )
        try:
            self._fd: int | None = os.open(
                self._name,
                os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
                dir_fd=self._dir,
            )
        except OSError as exc:
            os.close(self._dir)
            why = "it is a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
            raise ConfigurationError(
                f"cannot open audit log path={str(path)!r}: {why}; pass a writable file path"
            ) from exc
        # Owner and mode of the directory and the log as opened: a change later (a chmod that
        # exposes them to other users) is tampering, caught before and after every append.
        self._modes = (owner_and_mode(self._dir), owner_and_mode(self._fd))
        try:
            with self._exclusive():
                self._check_same_file("opening")
                self._start_chain()
        except BaseException:
            self.close()
            raise

    def _start_chain(self) -> None:
        """Give an empty log without a head its head (and so its genesis)."""
        assert self._fd is not None and self._dir is not None
        if os.fstat(self._fd).st_size == 0 and self._read_head(required=False) is None:
            genesis = secrets.token_hex(32)
            fresh = _Head(genesis=genesis, count=0, last_sha256=genesis, size_bytes=0)
            create_file_once(self._dir, self._head_name, fresh.encode(), fsync=self.fsync)

    def _check_tail(self, head: _Head) -> None:
        """Before this writer's first append: the log's last line is the one its head names."""
        assert self._dir is not None
        if head.count and not self._tail_checked:
            last = _last_line(self._dir, self._name, head.size_bytes)
            if hashlib.sha256(last).hexdigest() != head.last_sha256:
                raise AuditError(
                    f"audit log path={str(self.path)!r}: the last event does not match the chain "
                    "head (rewritten or swapped); move the log aside and verify it with "
                    "'safeexec log verify'"
                )
        self._tail_checked = True

    def write(self, event: AuditEvent) -> AuditEvent:
        """Mask, chain, encode and append one event; returns the event exactly as written.

        Raises :class:`~safeexec.errors.AuditError` if the line could not be written in full, or
        if the log's file was unlinked, replaced, truncated or appended to behind this writer.
        """
        event = _mask(event, self._patterns)
        with self._lock:
            if self._fd is None or self._dir is None:
                raise AuditError(
                    f"audit log path={str(self.path)!r} is closed; open a new AuditLog to write"
                )
            fd = self._fd
            with self._exclusive():
                self._check_same_file("before appending")
                head = self._read_head(required=True)
                assert head is not None
                self._check_size(head, os.fstat(fd).st_size)
                self._check_tail(head)
                event = dataclasses.replace(
                    event, sequence=head.count + 1, prev_sha256=head.last_sha256
                )
                data = _encode(event)
                try:
                    written = os.write(fd, data)
                    if written != len(data):
                        # Terminate the torn line so the next event starts on a line of its own;
                        # the head keeps the last whole event, so the tear is reported on read.
                        written += os.write(fd, b"\n")
                        self._replace_head(
                            dataclasses.replace(head, size_bytes=head.size_bytes + written)
                        )
                        raise AuditError(
                            f"short write to audit log path={str(self.path)!r}: "
                            f"{written - 1} of {len(data)} bytes of action_id={event.action_id!r}"
                        )
                    if self.fsync:
                        os.fsync(fd)
                except OSError as exc:
                    raise AuditError(
                        f"cannot write audit event action_id={event.action_id!r} to "
                        f"path={str(self.path)!r}: {exc.strerror or exc}"
                    ) from exc
                self._check_same_file("after appending")
                after = os.fstat(fd).st_size
                if after != head.size_bytes + len(data):
                    raise AuditError(
                        f"audit log path={str(self.path)!r} is {after} bytes after appending "
                        f"action_id={event.action_id!r}, not {head.size_bytes + len(data)}: "
                        "something else writes to it"
                    )
                self._replace_head(
                    _Head(
                        genesis=head.genesis,
                        count=head.count + 1,
                        last_sha256=hashlib.sha256(data[:-1]).hexdigest(),
                        size_bytes=after,
                    )
                )
            self._events += 1
            self._bytes += len(data)
            self._masked += bool(event.masked_fields)
        return event

    def read(self) -> tuple[AuditEvent, ...]:
        """Every event in the log, decoded strictly and verified against the chain and its head.

        Raises ``AuditError`` naming the first line (or the head) that does not fit.
        """
        with self._lock:
            own = self._dir is not None
            dir_fd = self._dir if self._dir is not None else _open_directory(self.path.parent)
        try:
            return _read_chain(dir_fd, self.path)
        finally:
            if not own:
                os.close(dir_fd)

    def __iter__(self) -> Iterator[AuditEvent]:
        return iter(self.read())

    def mask_record(self, record: dict[str, JSONValue]) -> dict[str, JSONValue]:
        """``record`` (a JSON object written beside this log, such as a harness turn) with its
        strings masked by this log's patterns, exactly as events are; the masked paths are
        listed under ``masked_fields`` when there are any."""
        masked: list[str] = []
        out = _mask_value(record, "", self._patterns, masked)
        return {**out, "masked_fields": list[JSONValue](masked)} if masked else out

    def statistics(self) -> AuditStatistics:
        with self._lock:
            return AuditStatistics(
                events_written=self._events, bytes_written=self._bytes, events_masked=self._masked
            )

    def close(self) -> None:
        """Close the file; idempotent. Later writes raise ``AuditError``."""
        with self._lock:
            for fd in (self._fd, self._dir):
                if fd is not None:
                    os.close(fd)
            self._fd = self._dir = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- the chain's guards --------------------------------------------------------------------

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        # flock is per open file description: it serialises AuditLogs in this process too.
        assert self._fd is not None
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _check_same_file(self, when: str) -> None:
        """The name still holds the file this writer appends to (not unlinked, not replaced)."""
        assert self._fd is not None and self._dir is not None
        mine = os.fstat(self._fd)
        try:
            named = os.stat(self._name, dir_fd=self._dir, follow_symlinks=False)
        except FileNotFoundError:
            named = None
        if named is None:
            what = "unlinked"
        elif (named.st_dev, named.st_ino) != (mine.st_dev, mine.st_ino):
            what = "replaced"
        elif mine.st_nlink == 0 or not stat.S_ISREG(mine.st_mode):
            what = "unlinked"
        elif (now := (owner_and_mode(self._dir), owner_and_mode(self._fd))) != self._modes:
            raise AuditError(
                f"the owner or mode of audit log path={str(self.path)!r} or of its directory "
                f"changed {when}: (uid, mode) of directory and log were {_show(self._modes)}, now "
                f"{_show(now)}; find out who touched the state dir, then open a new AuditLog"
            )
        else:
            return
        raise AuditError(
            f"audit log path={str(self.path)!r} was {what} {when} (the open file is no longer "
            "the one the path names); events would land in no log. Find out who touched the "
            "state dir, then open a new AuditLog"
        )

    def _check_size(self, head: _Head, size: int) -> None:
        if size != head.size_bytes:
            raise AuditError(
                f"audit log path={str(self.path)!r} is {size} bytes but its chain head says "
                f"{head.size_bytes}: it was truncated, rewritten or appended to outside safeexec; "
                "verify it with 'safeexec log verify'"
            )

    def _read_head(self, *, required: bool) -> _Head | None:
        assert self._dir is not None
        return _load_head(self._dir, self._head_name, self.path, required=required)

    def _replace_head(self, head: _Head) -> None:
        # In place, one pwrite under the flock every reader and writer takes: a rename per event
        # would cost a data flush on ext4 (auto_da_alloc replaces-via-rename), ~2 ms each.
        assert self._dir is not None
        record = head.encode()
        try:
            fd = os.open(
                self._head_name, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self._dir
            )
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise OSError(errno.EINVAL, "not a regular file")
                if os.pwrite(fd, record, 0) != len(record):
                    raise OSError(errno.EIO, "short write")
                if self.fsync:
                    os.fdatasync(fd)  # same size, same blocks: the data is all there is to sync
            finally:
                os.close(fd)
        except OSError as exc:
            raise AuditError(
                f"cannot update the chain head {self._head_name!r} of path={str(self.path)!r}: "
                f"{exc.strerror or exc}"
            ) from exc


def _show(modes: tuple[tuple[int, int], ...]) -> str:
    return ", ".join(f"({uid}, {mode:#o})" for uid, mode in modes)


def read_log(state_dir: Path, *, name: str = "audit.jsonl") -> tuple[AuditEvent, ...]:
    """Every event of the audit log in ``state_dir``, verified as :func:`verify_log` does.

    Creates nothing and needs no write access; ``AuditError`` names what does not fit.
    """
    dir_fd = _open_directory(Path(state_dir))
    try:
        return _read_chain(dir_fd, Path(state_dir) / name)
    finally:
        os.close(dir_fd)


def verify_log(state_dir: Path, *, name: str = "audit.jsonl") -> LogVerification:
    """Check the audit log in ``state_dir`` against its hash chain and head; never raises.

    ``ok`` is ``True`` only if every line decodes strictly, the sequence runs 1..n without a gap,
    each line names its predecessor's hash (the first, the log's genesis) and the log ends exactly
    where its head says.
    """
    path = Path(state_dir) / name
    try:
        events = read_log(state_dir, name=name)
    except AuditError as exc:
        return LogVerification(path=path, ok=False, events=0, reason=str(exc))
    return LogVerification(path=path, ok=True, events=len(events), reason="intact")


def _encode(event: AuditEvent) -> bytes:
    try:
        line = json.dumps(event.to_json(), ensure_ascii=True, allow_nan=False) + "\n"
    except (TypeError, ValueError) as exc:
        raise AuditError(f"cannot encode audit event action_id={event.action_id!r}: {exc}") from exc
    return line.encode("ascii")


def _open_directory(path: Path) -> int:
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise AuditError(
            f"cannot open the audit log directory path={str(path)!r}: {exc.strerror or exc}"
        ) from exc


def _load_head(dir_fd: int, head_name: str, path: Path, *, required: bool) -> _Head | None:
    try:
        raw = read_file(dir_fd, head_name, limit=_HEAD_BYTES)
    except FileNotFoundError:
        if not required:
            return None
        raise AuditError(
            f"audit log path={str(path)!r} has no chain head {head_name!r}: it was deleted (or the "
            "log predates chained logs), so truncation cannot be ruled out"
        ) from None
    except OSError as exc:
        raise AuditError(
            f"cannot read the chain head {head_name!r} of path={str(path)!r}: {exc.strerror or exc}"
        ) from exc
    return _Head.decode(raw, f"{path}{HEAD_SUFFIX}")


def _read_chain(dir_fd: int, path: Path) -> tuple[AuditEvent, ...]:
    """Decode and verify every line of the log named ``path.name`` below ``dir_fd``."""
    try:
        fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        raise AuditError(f"cannot read audit log path={str(path)!r}: {exc}") from exc
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise AuditError(f"audit log path={str(path)!r} is not a regular file")
        fcntl.flock(fd, fcntl.LOCK_SH)  # a consistent view: no writer is between log and head
        head = _load_head(dir_fd, path.name + HEAD_SUFFIX, path, required=True)
        assert head is not None
        events: list[AuditEvent] = []
        previous = head.genesis
        size = 0
        for number, raw in enumerate(handle, start=1):
            size += len(raw)
            where = f"{path}:{number}"
            if not raw.endswith(b"\n"):
                raise AuditError(f"{where}: the last line is torn (no newline)")
            try:
                event = AuditEvent.from_json(json.loads(raw))
            except ValueError as exc:  # JSONDecodeError and strict-decode errors alike
                raise AuditError(f"{where}: malformed audit event: {exc}") from exc
            if event.sequence != number:
                raise AuditError(
                    f"{where}: sequence={event.sequence!r} where {number} belongs: an event was "
                    "deleted, inserted or moved"
                )
            if event.prev_sha256 != previous:
                what = (
                    "this log's genesis (the file was swapped)"
                    if number == 1
                    else f"line {number - 1}'s hash: an event before it was rewritten"
                )
                raise AuditError(f"{where}: prev_sha256 does not match {what}")
            previous = hashlib.sha256(raw[:-1]).hexdigest()
            events.append(event)
        if len(events) != head.count or size != head.size_bytes:
            raise AuditError(
                f"audit log path={str(path)!r} holds {len(events)} events ({size} bytes) but its "
                f"chain head says {head.count} ({head.size_bytes} bytes): events were deleted "
                "from its end (truncated) or appended outside safeexec"
            )
        if previous != head.last_sha256:
            raise AuditError(
                f"audit log path={str(path)!r}: the last event does not match the chain head: it "
                "was rewritten, or the file was swapped"
            )
    return tuple(events)


def _last_line(dir_fd: int, name: str, size: int) -> bytes:
    """The last line of the log (without its newline), read backwards from ``size``."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        end = size - 1  # the final newline
        tail = b""
        while end > 0:
            start = max(0, end - 65536)
            tail = os.pread(fd, end - start, start) + tail
            cut = tail.rfind(b"\n")
            if cut >= 0:
                return tail[cut + 1 :]
            end = start
        return tail
    finally:
        os.close(fd)


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
