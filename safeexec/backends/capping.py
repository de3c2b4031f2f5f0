"""Head-and-tail output capping, shared by every backend that captures a run's output.

A run's stdout and stderr are capped while they are read (the worker's pipes) or written (the
in-process sink): the first and last ``cap // 2`` bytes are kept, the middle is only counted, and
the kept value says how much was left out. Memory stays bounded however much the code prints.
"""

from __future__ import annotations

import io
from collections.abc import Callable

__all__ = ["CappedText", "HeadTailCapture", "locate_omission", "omission_marker"]

# The tail buffer may grow this far past what it keeps before it is cut (fewer, larger cuts).
_TAIL_SLACK = 1 << 16


def omission_marker(omitted_bytes: int) -> bytes:
    """The line :meth:`HeadTailCapture.value` puts where it left ``omitted_bytes`` out."""
    return f"\n[... {omitted_bytes} bytes omitted ...]\n".encode()


def locate_omission(value: bytes, omitted_bytes: int) -> tuple[int, int] | None:
    """Where in a kept ``value`` its omission marker sits (``(start, end)``), else ``None``.

    The layout is fixed: the head holds ``cap - cap // 2`` bytes and the tail ``cap // 2``, so
    the marker's place follows from the value's size alone (never from searching its text,
    which the code wrote and may imitate)."""
    marker = omission_marker(omitted_bytes)
    kept = len(value) - len(marker)
    if kept < 0:
        return None
    start = kept - kept // 2
    if value[start : start + len(marker)] != marker:
        return None
    return start, start + len(marker)


class HeadTailCapture:
    """Keeps the first and last ``cap // 2`` bytes of a stream and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap = max(0, cap)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.newlines = 0  # in everything fed, so the lines left out can be counted exactly

    def feed(self, data: bytes) -> None:
        """Take the next bytes of the stream."""
        self.total += len(data)
        self.newlines += data.count(b"\n")
        head_room = self.cap - self.cap // 2 - len(self.head)
        if head_room > 0:
            self.head += data[:head_room]
            data = data[head_room:]
        if data:
            self.tail += data
            keep = self.cap // 2
            if len(self.tail) > 2 * keep + _TAIL_SLACK:
                del self.tail[: len(self.tail) - keep]

    @property
    def truncated(self) -> bool:
        """Did the stream hold more than ``cap`` bytes?"""
        return self.total > self.cap

    def omitted(self) -> tuple[int, int]:
        """How many bytes and newlines :meth:`value` leaves out (``(0, 0)`` if nothing)."""
        if not self.truncated:
            return 0, 0
        keep = self.cap // 2
        tail = self.tail[len(self.tail) - keep :] if keep else b""
        kept_newlines = self.head.count(b"\n") + tail.count(b"\n")
        return self.total - len(self.head) - len(tail), self.newlines - kept_newlines

    def value(self) -> bytes:
        """What was kept, with a marker saying how many bytes were omitted in between."""
        if not self.truncated:
            return bytes(self.head + self.tail)
        keep = self.cap // 2
        tail = bytes(self.tail[len(self.tail) - keep :]) if keep else b""
        omitted = self.total - len(self.head) - len(tail)
        return bytes(self.head) + omission_marker(omitted) + tail


class CappedText(io.TextIOBase):
    """A text sink whose UTF-8 bytes go to a :class:`HeadTailCapture` (``capture``) and, when
    the call streams, to ``tap`` as well (an ``OutputTap``'s ``feed``, which caps what it
    streams on its own)."""

    def __init__(self, cap: int, *, tap: Callable[[bytes], None] | None = None) -> None:
        self.capture = HeadTailCapture(cap)
        self._tap = tap

    def write(self, text: str) -> int:
        data = str(text).encode("utf-8", "backslashreplace")
        self.capture.feed(data)
        if self._tap is not None:
            self._tap(data)
        return len(text)
