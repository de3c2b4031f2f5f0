"""Output streamed while a cell runs: bytes read from a stream become :class:`OutputChunk` values.

One :class:`OutputTap` per stream decodes what the host reads (UTF-8, an incomplete character
held for the next read, bad bytes replaced) and hands it to the call's sink, for at most ``cap``
bytes; past the cap it sends one marker chunk and stops (the call's result still keeps the
stream's head and tail). The sink runs on the thread that runs the call and must not raise:
``Session`` wraps the caller's callback so that it never does.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable

from safeexec._support.units import format_bytes
from safeexec.model.values import OutputChunk, StreamName

__all__ = ["OutputSink", "OutputTap"]

OutputSink = Callable[[OutputChunk], None]
"""Receives a running call's output, chunk by chunk, in the order it was read."""


class OutputTap:
    """Decodes one stream's bytes as they arrive and hands them to ``sink``, up to ``cap`` bytes."""

    def __init__(self, sink: OutputSink, stream: StreamName, cap: int) -> None:
        self._sink = sink
        self._stream = stream
        self._cap = max(0, cap)
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.sent_bytes = 0
        self.stopped = False

    def feed(self, data: bytes) -> None:
        """Take the next bytes read from the stream."""
        if self.stopped or not data:
            return
        room = self._cap - self.sent_bytes
        piece = data[:room]
        self.sent_bytes += len(piece)
        text = self._decoder.decode(piece)
        if len(data) > room:
            text += self._decoder.decode(b"", final=True)
            text += (
                f"\n[... {self._stream.value} past {format_bytes(self._cap)} is not streamed; "
                "the result keeps its head and tail ...]\n"
            )
            self.stopped = True
        if text:
            self._sink(OutputChunk(stream=self._stream, text=text))

    def close(self) -> None:
        """The stream ended: send what the decoder still holds (an incomplete last character)."""
        if self.stopped:
            return
        self.stopped = True
        text = self._decoder.decode(b"", final=True)
        if text:
            self._sink(OutputChunk(stream=self._stream, text=text))
