"""Turn a decision and its execution result into the bounded text handed back to the model.

:func:`observe` is deterministic and pure apart from reading the full output from the blob store.
A denied (or unrun) action shows its findings ruff-style, each with its evidence and caret. A run
shows a status line, events worth knowing, ``--- stdout ---`` / ``--- stderr ---`` sections and the
artifacts. Output is cut head + tail with an explicit marker, every line is capped, tracebacks lose
the frames that lead up to the user's code, and the whole text respects ``ObserveConfig``
(``max_bytes`` of UTF-8, ``max_lines``, ``max_line_chars``). The full output stays reachable
through ``stdout_ref`` / ``stderr_ref``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from safeexec._support.escaping import escape_controls
from safeexec._support.tracebacks import kept_traceback_lines
from safeexec._support.units import format_bytes, format_seconds
from safeexec.audit.blobs import BlobStore
from safeexec.backends.capping import locate_omission
from safeexec.errors import AuditError
from safeexec.model.fieldwise import Fieldwise
from safeexec.model.values import (
    BlobRef,
    Decision,
    DisplayKind,
    ExecResult,
    ExecStatus,
    ExecutionEvent,
    Finding,
    GuardDenied,
    LimitHit,
    NetworkConnection,
    NetworkVerdict,
    Observation,
    OutputChunk,
    OutputCut,
    StreamName,
    SyscallKilled,
    ToolCalled,
    ToolRefused,
    Verdict,
)
from safeexec.policy.schema import ObserveConfig

__all__ = ["OutputRelay", "observe"]

# Only the first and last lines of an output are decoded (as many as could be shown, plus room
# for a traceback), each side within _SCAN_BYTES; the middle is only counted.
_SCAN_BYTES = 4 * 1024 * 1024
_TRACEBACK_LINES = 200
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
# Terminal escape sequences, 7-bit (ESC [ ..., ESC ] ... ST, ESC x) and their 8-bit C1 forms (CSI
# U+009B, OSC U+009D ending in BEL or ST U+009C), which terminals honour just the same.
_ANSI_ESCAPE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x9b[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)|\x9d[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
    r"|\x1b[@-_]"
)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class _Stream(Fieldwise):
    """One output stream, prepared: its lines (capped) and what was already cut while reading."""

    label: str
    lines: tuple[str, ...]
    capped: bool
    original_bytes: tuple[int, ...]
    cut_lines: int
    cut_bytes: int
    gap_at: int | None = None  # lines before the middle that is always cut, if there is one


def observe(
    *, decision: Decision, result: ExecResult | None, blobs: BlobStore, config: ObserveConfig
) -> Observation:
    """The model's view of one step; ``truncated`` says whether anything was cut."""
    if result is None or decision.verdict is Verdict.DENY:
        head = _not_run_lines(decision)
        text, truncated = _fit(head, (), config)
        return Observation(text=text, truncated=truncated)
    # Events and artifacts are listed, but never so many that no output would fit.
    listed = max(1, config.max_lines // 4)
    head = _run_head(result, listed=listed)
    streams = (
        _read_stream(
            "stdout",
            result.stdout,
            blobs,
            config,
            sandbox_cut=result.stdout_cut,
            trim_traceback=False,
        ),
        _read_stream(
            "stderr",
            result.stderr,
            blobs,
            config,
            sandbox_cut=result.stderr_cut,
            trim_traceback=True,
        ),
    )
    if result.status is ExecStatus.ERROR and result.message and not streams[1].lines:
        head.insert(1, _one_line(result.message))  # no traceback to say what went wrong
    tail = _artifact_lines(result, listed=listed) + _display_lines(result, listed=listed)
    text, truncated = _fit(head, streams, config, tail=tail)
    listable_events = sum(1 for event in result.events if _event_line(event))
    shortened = listable_events > listed or len(result.artifacts) > listed
    shortened = shortened or len(result.displays) > listed or result.displays_dropped > 0
    shortened = shortened or any(display.truncated for display in result.displays)
    return Observation(
        text=text,
        truncated=truncated or shortened or result.truncated,
        stdout_ref=result.stdout.uri,
        stderr_ref=result.stderr.uri,
    )


def _not_run_lines(decision: Decision) -> list[str]:
    if decision.verdict is Verdict.DENY:
        lines = ["[denied by policy: the code was not run]"]
    elif decision.verdict is Verdict.NEEDS_APPROVAL:
        lines = ["[needs approval: the code was not run]"]
    else:
        lines = ["[not run]"]
    for finding in decision.findings:
        lines.extend(_finding_lines(finding))
    return lines


def _finding_lines(finding: Finding) -> list[str]:
    """``SX001 syntax-error (line 3, col 5): message`` and the evidence lines, indented."""
    where = ""
    if finding.span is not None:
        where = f" (line {finding.span.start_line}, col {finding.span.start_column})"
    lines = [f"{finding.rule} {finding.name}{where}: {_one_line(finding.message)}"]
    if finding.evidence:
        lines.extend("    " + _clean(line) for line in finding.evidence.split("\n"))
    return lines


def _run_head(result: ExecResult, *, listed: int) -> list[str]:
    lines = [_status_line(result)]
    if result.state_lost:
        lines.append("[session state was lost: names and imports from earlier steps are gone]")
    events = [line for event in result.events if (line := _event_line(event))]
    lines.extend(_at_most(events, listed, "events"))
    if result.truncated:
        cuts = [
            f"{label} {cut.omitted_bytes:,} bytes ({cut.omitted_lines:,} lines)"
            for label, cut in (("stdout", result.stdout_cut), ("stderr", result.stderr_cut))
            if cut is not None
        ]
        detail = f": left out of the middle of {' and '.join(cuts)}" if cuts else ""
        lines.append(f"[the sandbox capped this output at its output limit{detail}]")
    return lines


def _status_line(result: ExecResult) -> str:
    message = _one_line(result.message)
    match result.status:
        case ExecStatus.OK:
            return "[ok]" if result.exit_code is None else f"[exit {result.exit_code}]"
        case ExecStatus.ERROR:
            return "[error]" if result.exit_code is None else f"[exit {result.exit_code}: error]"
        case ExecStatus.TIMEOUT:
            return f"[{message}]" if "timeout" in message else _labelled("timeout", message)
        case ExecStatus.KILLED:
            return f"[{message}]" if message.startswith("killed") else _labelled("killed", message)
        case ExecStatus.LIMIT_EXCEEDED:
            return _labelled("limit exceeded", message)
        case ExecStatus.DENIED_AT_RUNTIME:
            return _labelled("denied at runtime", message)
        case ExecStatus.INTERRUPTED:
            return (
                f"[{message}]"
                if message.startswith("interrupted")
                else _labelled("interrupted", message)
            )
    return _labelled(str(result.status), message)


def _labelled(label: str, message: str) -> str:
    return f"[{label}: {message}]" if message else f"[{label}]"


def _event_line(event: ExecutionEvent) -> str:
    match event:
        case ToolRefused(tool=tool, reason=reason):
            return f"[tool refused: {_one_line(tool)}: {_one_line(reason)}]"
        case GuardDenied(guard=guard, detail=detail):
            return f"[guard denied: {_one_line(guard)}: {_one_line(detail)}]"
        case LimitHit(limit=limit, value=value):
            return f"[limit hit: {limit} = {_limit_value(limit, value)}]"
        case SyscallKilled(signal=number, syscall=syscall):
            return f"[killed by signal {number}{f' in {syscall}' if syscall else ''}]"
        case NetworkConnection(verdict=NetworkVerdict.REFUSED | NetworkVerdict.CUT):
            return _network_line(event)
        case ToolCalled() | NetworkConnection():
            return ""
    return ""


def _network_line(event: NetworkConnection) -> str:
    """A refused or cut connection: where to, why, and the rule and policy key that govern it."""
    what = "refused" if event.verdict is NetworkVerdict.REFUSED else "cut"
    where = f"{event.host}:{event.port}" if event.host else "a connection"
    governs = f" ({event.rule}, policy key {event.key})" if event.rule else ""
    return f"[network {what}: {_one_line(where)}: {_one_line(event.reason)}{governs}]"


def _limit_value(limit: str, value: float) -> str:
    """A limit's value in the unit its name states (``1 MiB``, ``10 s``), else as a number."""
    if limit.endswith("_bytes"):
        return format_bytes(value)
    if limit.endswith("_seconds"):
        return format_seconds(value)
    return f"{value:g}"


def _artifact_lines(result: ExecResult, *, listed: int) -> list[str]:
    if not result.artifacts:
        return []
    names = [
        f"{_clean_name(artifact.name)} ({artifact.blob.size:,} bytes, "
        f"{_clean_name(artifact.media_type)})"
        for artifact in result.artifacts
    ]
    return ["--- artifacts ---", *_at_most(names, listed, "artifacts")]


_DISPLAY_TEXT_LINES = 8


def _display_lines(result: ExecResult, *, listed: int) -> list[str]:
    """Each rich value: its media types, and the text of a ``display()`` (a result's text is
    already in stdout, so a result that is only text is not listed)."""
    lines: list[str] = []
    worth = [
        display
        for display in result.displays
        if display.kind is DisplayKind.DISPLAY
        or any(i.media_type != "text/plain" for i in display.items)
    ]
    for number, display in enumerate(worth[:listed], start=1):
        kinds = ", ".join(
            item.media_type
            if item.media_type == "text/plain"
            else f"{_clean_name(item.media_type)} ({item.blob.size:,} bytes)"
            for item in display.items
        )
        cut = " (some representations were too big and left out)" if display.truncated else ""
        lines.append(f"[{number}] {display.kind.value}: {kinds}{cut}")
        plain = display.get("text/plain")
        if display.kind is DisplayKind.DISPLAY and plain is not None:
            shown = plain.text.split("\n")
            lines.extend("    " + _clean(line) for line in shown[:_DISPLAY_TEXT_LINES])
            if len(shown) > _DISPLAY_TEXT_LINES:
                lines.append(f"    [... {len(shown) - _DISPLAY_TEXT_LINES:,} more lines]")
    if len(worth) > listed:
        lines.append(f"[... {len(worth) - listed:,} more displays]")
    if result.displays_dropped:
        lines.append(
            f"[... {result.displays_dropped:,} displays past the per-call limit were dropped]"
        )
    return ["--- displays ---", *lines] if lines else []


def _at_most(lines: list[str], limit: int, what: str) -> list[str]:
    if len(lines) <= limit:
        return lines
    return [*lines[: limit - 1], f"[... {len(lines) - limit + 1:,} more {what}]"]


def _read_stream(
    label: str,
    ref: BlobRef,
    blobs: BlobStore,
    config: ObserveConfig,
    *,
    sandbox_cut: OutputCut | None,
    trim_traceback: bool,
) -> _Stream:
    """One stream as shown: its first and last lines, and the middle between them counted in
    the output's own bytes and newlines, what the sandbox's cap left out included."""
    try:
        # Most streams are empty, and the empty blob's bytes are known by its address alone.
        data = b"" if ref.sha256 == _EMPTY_SHA256 else blobs.get(ref)
    except (KeyError, AuditError, OSError, ValueError) as exc:
        note = "missing" if isinstance(exc, KeyError) else "unreadable"
        line = f"[{label} {note}: {ref.uri}]"
        return _Stream(
            label=label,
            lines=(line,),
            capped=False,
            original_bytes=(_size(line),),
            cut_lines=0,
            cut_bytes=0,
        )
    side = config.max_lines + _TRACEBACK_LINES
    gap = None if sandbox_cut is None else locate_omission(data, sandbox_cut.omitted_bytes)
    if sandbox_cut is not None and gap is not None:
        # The sandbox kept a head and a tail around its marker. The marker is not output: the
        # part lines on either side of it join the middle, which is counted, never shown.
        head_part, tail_part = data[: gap[0]], data[gap[1] :]
        whole = head_part.rfind(b"\n") + 1
        first = tail_part.find(b"\n") + 1 or len(tail_part)
        head_keep, tail_keep = head_part[:whole], tail_part[first:]
        head_end = _window(head_keep, lines=side)[0]
        tail_start = _window(tail_keep, lines=side)[1]
        head_raw, tail_raw = head_keep[:head_end], tail_keep[tail_start:]
        cut_bytes = len(head_part) - head_end + sandbox_cut.omitted_bytes + first + tail_start
        cut_lines = head_part.count(b"\n", head_end) + sandbox_cut.omitted_lines
        cut_lines += tail_part.count(b"\n", 0, first + tail_start)
        if tail_part and b"\n" not in tail_part:
            cut_lines += 1  # the output's last line, unterminated, is in the middle
        split = True
    else:
        head_end, tail_start = _window(data, lines=side)
        split = head_end < tail_start
        # Only the lines that can be shown are decoded; the middle is counted, exactly.
        head_raw, tail_raw = (data[:head_end], data[tail_start:]) if split else (data, b"")
        cut_bytes = tail_start - head_end if split else 0
        cut_lines = data.count(b"\n", head_end, tail_start) if split else 0
    head_lines, head_sizes = _raw_lines(head_raw)
    tail_lines, tail_sizes = _raw_lines(tail_raw)
    lines = [_decode(line) for line in (*head_lines, *tail_lines)]
    sizes = [*head_sizes, *tail_sizes]
    gap_at = len(head_lines) if split else None
    if trim_traceback:
        kept = kept_traceback_lines(lines)
        if gap_at is not None:
            gap_at = sum(1 for index in kept if index < gap_at)
        lines, sizes = [lines[i] for i in kept], [sizes[i] for i in kept]
    return _Stream(
        label=label,
        lines=tuple(_cap_line(line, config.max_line_chars) for line in lines),
        capped=any(len(line) > config.max_line_chars for line in lines),
        original_bytes=tuple(sizes),
        cut_lines=cut_lines,
        cut_bytes=cut_bytes,
        gap_at=gap_at,
    )


def _raw_lines(raw: bytes) -> tuple[list[bytes], list[int]]:
    """The lines of ``raw`` and each one's size in it (its newline included, when it has one)."""
    parts = raw.split(b"\n")
    last = parts.pop()
    sizes = [len(part) + 1 for part in parts]
    if last:
        parts.append(last)
        sizes.append(len(last))
    return parts, sizes


def _window(data: bytes, *, lines: int) -> tuple[int, int]:
    """Offsets after the first ``lines`` lines and before the last ``lines`` lines of ``data``.

    Each side looks at most ``_SCAN_BYTES`` bytes; a line longer than that is split.
    """
    size = len(data)
    limit = min(size, _SCAN_BYTES)
    head_end = 0
    for _ in range(lines):
        newline = data.find(b"\n", head_end, limit)
        if newline < 0:
            head_end = limit if head_end == 0 or size <= _SCAN_BYTES else head_end
            break
        head_end = newline + 1
    low = size - limit
    tail_start = size
    end = size - 1 if data.endswith(b"\n") else size
    for _ in range(lines):
        newline = data.rfind(b"\n", low, end)
        if newline < 0:
            tail_start = low if low == 0 or tail_start == size else tail_start
            break
        tail_start = end = newline
        tail_start += 1
    return head_end, tail_start


def _decode(data: bytes) -> str:
    """Text as a terminal would leave it: CRLF as LF, a carriage return overwrites, no escapes."""
    text = data.decode("utf-8", "replace").replace("\r\n", "\n")
    text = _ANSI_ESCAPE.sub("", text)
    if "\r" in text:
        text = "\n".join(_after_last_carriage_return(line) for line in text.split("\n"))
    return escape_controls(text)


def _after_last_carriage_return(line: str) -> str:
    parts = [part for part in line.split("\r") if part]
    return parts[-1] if parts else ""


def _cap_line(line: str, max_chars: int) -> str:
    """Keep a long line's head and tail around a marker saying how many characters were cut."""
    if len(line) <= max_chars:
        return line
    marker = f" … [{len(line) - max_chars:,} chars cut] … "
    room = max_chars - len(marker)
    if room < 2:
        return line[:max_chars]
    marker = f" … [{len(line) - room:,} chars cut] … "
    room = max(0, max_chars - len(marker))
    head = (room + 1) // 2
    return line[:head] + marker + line[len(line) - (room - head) :]


def _fit(
    head: list[str],
    streams: tuple[_Stream, ...],
    config: ObserveConfig,
    *,
    tail: list[str] | tuple[str, ...] = (),
) -> tuple[str, bool]:
    """Lay out head, streams and tail within the budgets; ``(text, anything_cut)``."""
    max_lines = max(1, config.max_lines)
    max_bytes = max(1, config.max_bytes)
    fixed = [_cap_line(line, config.max_line_chars) for line in head]
    tail_lines = [_cap_line(line, config.max_line_chars) for line in tail]
    present = [s for s in streams if s.lines or s.cut_bytes or s.gap_at is not None]
    if streams and not present:
        fixed.append("(no output)")
    headers = [f"--- {stream.label} ---" for stream in present]
    used_lines = len(fixed) + len(tail_lines) + len(headers)
    used_bytes = sum(_size(line) for line in (*fixed, *tail_lines, *headers))
    budgets = _share(
        [(len(s.lines), sum(_size(line) for line in s.lines)) for s in present],
        lines=max_lines - used_lines,
        size=max_bytes - used_bytes,
    )
    body: list[str] = list(fixed)
    cut = any(len(line) > config.max_line_chars for line in (*head, *tail))
    cut = cut or any(stream.capped for stream in present)
    for stream, header, (line_budget, byte_budget) in zip(present, headers, budgets, strict=True):
        body.append(header)
        kept, stream_cut = _head_and_tail(stream, line_budget, byte_budget, config)
        body.extend(kept)
        cut = cut or stream_cut
    body.extend(tail_lines)
    text, hard_cut = _hard_limit(body, max_lines=max_lines, max_bytes=max_bytes, config=config)
    return text, cut or hard_cut


def _share(needs: list[tuple[int, int]], *, lines: int, size: int) -> list[tuple[int, int]]:
    """Split the line and byte budgets between streams; what one does not need, another gets."""
    line_shares = _split([need[0] for need in needs], lines)
    byte_shares = _split([need[1] for need in needs], size)
    return list(zip(line_shares, byte_shares, strict=True))


def _split(needs: list[int], budget: int) -> list[int]:
    shares = [0] * len(needs)
    remaining = max(0, budget)
    pending = sorted(range(len(needs)), key=lambda i: needs[i])
    while pending:
        fair = remaining // len(pending)
        index = pending.pop(0)
        shares[index] = min(needs[index], fair) if pending else remaining
        remaining -= shares[index]
    return shares


def _head_and_tail(
    stream: _Stream, line_budget: int, byte_budget: int, config: ObserveConfig
) -> tuple[list[str], bool]:
    """The stream's first and last lines within budget, with a marker for what was cut."""
    lines = stream.lines
    total_bytes = sum(_size(line) for line in lines)
    fits = len(lines) <= line_budget and total_bytes <= byte_budget
    if stream.gap_at is None and fits:
        return list(lines), False
    everything = sum(stream.original_bytes) + stream.cut_bytes
    marker_room = _size(_marker(len(lines) + stream.cut_lines, everything))
    lines_left = max(0, line_budget - 1)
    bytes_left = max(0, byte_budget - marker_room)
    first: list[str] = []
    last: list[str] = []
    front, back = 0, len(lines) - 1
    take_front = True
    stalled = 0
    # Alternate head and tail, one line at a time, until a budget or the stream runs out.
    while front <= back and lines_left > 0 and stalled < 2:
        index = front if take_front else back
        cost = _size(lines[index])
        # Neither side may reach across the middle that must be cut.
        beside = stream.gap_at is None or (
            index < stream.gap_at if take_front else index >= stream.gap_at
        )
        if beside and cost <= bytes_left:
            (first if take_front else last).append(lines[index])
            bytes_left -= cost
            lines_left -= 1
            if take_front:
                front += 1
            else:
                back -= 1
            stalled = 0
        else:
            stalled += 1
        take_front = not take_front
    cut_lines = back + 1 - front + stream.cut_lines
    cut_bytes = sum(stream.original_bytes[front : back + 1]) + stream.cut_bytes
    marker = _cap_line(_marker(cut_lines, cut_bytes), config.max_line_chars)
    return [*first, marker, *reversed(last)], True


def _marker(lines: int, size: int) -> str:
    return f"[... {lines:,} lines ({size:,} bytes) cut ...]"


def _hard_limit(
    lines: list[str], *, max_lines: int, max_bytes: int, config: ObserveConfig
) -> tuple[str, bool]:
    """The last guard: whatever the layout did, the text fits ``max_lines`` and ``max_bytes``."""
    text = "\n".join(lines)
    if len(lines) <= max_lines and len(text.encode("utf-8")) <= max_bytes:
        return text, False
    marker = _cap_line("[... cut]", config.max_line_chars)
    room = max_bytes - len(marker.encode("utf-8"))
    kept: list[str] = []
    for line in lines[: max_lines - 1]:
        room -= _size(line)
        if room < 0:
            break
        kept.append(line)
    if not kept and lines and room + _size(lines[0]) > 1:
        # Not even the first line fits whole: keep the part of it that does.
        budget = room + _size(lines[0]) - 1
        kept.append(lines[0].encode("utf-8")[:budget].decode("utf-8", "ignore"))
    text = "\n".join([*kept, marker])
    if max_lines == 1 or len(text.encode("utf-8")) > max_bytes:
        # A budget too small for a marker line: the first line, cut to the byte budget.
        text = (lines[0] if lines else "").encode("utf-8")[:max_bytes].decode("utf-8", "ignore")
    return text, True


def _size(line: str) -> int:
    """UTF-8 bytes of a line plus its newline."""
    return len(line.encode("utf-8")) + 1


def _one_line(text: str) -> str:
    return _clean(text.strip().split("\n", 1)[0])


def _clean(text: str) -> str:
    return escape_controls(_ANSI_ESCAPE.sub("", text.replace("\r", "")))


def _clean_name(text: str) -> str:
    """A name the sandbox chose (a file name, a media type), whole and cleaned, with a line
    break shown as U+FFFD: it cannot end its section and forge the next (``_one_line`` keeps
    the first line of a message instead)."""
    return _clean(text).replace("\n", "\ufffd")


class OutputRelay:
    """Hands a step's streamed output to a caller's callback, as the model would read it.

    Each chunk's text is cleaned like an observation's output (terminal escapes dropped,
    carriage returns removed, controls escaped). The callback is guarded: the first exception
    it raises stops delivery for the step and is kept in :attr:`error` (the step runs on; the
    session raises it once the step is recorded). :meth:`finish` delivers a finished result's
    output whole when the mode streamed nothing (it cannot stream: fakes).
    """

    def __init__(self, callback: Callable[[OutputChunk], None]) -> None:
        self._callback = callback
        self.delivered = 0
        self.error: Exception | None = None

    def __call__(self, chunk: OutputChunk) -> None:
        if self.error is not None:
            return
        self.delivered += 1
        try:
            self._callback(replace(chunk, text=_clean(chunk.text)))
        except Exception as exc:
            self.error = exc

    def finish(self, result: ExecResult | None, blobs: BlobStore) -> None:
        """After the step: the result's (capped) output, if nothing was streamed while it ran."""
        if result is None or self.delivered:
            return
        for stream, ref in ((StreamName.STDOUT, result.stdout), (StreamName.STDERR, result.stderr)):
            if not ref.size:
                continue
            try:
                text = blobs.get(ref).decode("utf-8", "replace")
            except (KeyError, AuditError, OSError, ValueError):
                continue  # the observation says the blob is missing; nothing to stream
            self(OutputChunk(stream=stream, text=text))
