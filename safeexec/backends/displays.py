"""Rich values a call produced (its last expression, ``display(obj)``), kept as bounded blobs.

The worker sends each as a ``display`` frame (see :class:`~safeexec.sandbox.protocol.Display`);
the host trusts none of it: binary payloads must be valid base64, every payload lands in the
blob store (content-addressed, so a figure shown twice is stored once), and a call keeps at most
``MAX_DISPLAYS`` values and ``MAX_DISPLAY_BYTES`` of payload; what comes after is only counted.
"""

from __future__ import annotations

import base64
import binascii

from safeexec.audit.blobs import BlobStore
from safeexec.model.values import DisplayData, DisplayKind, MimeItem
from safeexec.sandbox.protocol import Display, is_textual

__all__ = ["MAX_DISPLAYS", "MAX_DISPLAY_BYTES", "DisplayCollector"]

MAX_DISPLAYS = 64
MAX_DISPLAY_BYTES = 32 * 1024 * 1024
_INLINE_TEXT_BYTES = 64 * 1024


class DisplayCollector:
    """The rich values of one call, in the order they came."""

    def __init__(self, blobs: BlobStore) -> None:
        self._blobs = blobs
        self.displays: list[DisplayData] = []
        self.dropped = 0
        self._bytes = 0

    def take(self, frame: Display) -> None:
        """Keep one value (or count it, past the limits)."""
        decoded: list[tuple[str, bytes, bool]] = []
        truncated = frame.truncated
        for media_type, payload in frame.data.items():
            textual = is_textual(media_type)
            if textual:
                data = payload.encode("utf-8", "surrogatepass")
            else:
                try:
                    data = base64.b64decode(payload, validate=True)
                except (binascii.Error, ValueError):
                    truncated = True  # a binary payload that is not base64 is left out
                    continue
            decoded.append((media_type, data, textual))
        size = sum(len(data) for _type, data, _textual in decoded)
        if len(self.displays) >= MAX_DISPLAYS or self._bytes + size > MAX_DISPLAY_BYTES:
            self.dropped += 1
            return
        self._bytes += size
        items = tuple(
            MimeItem(
                media_type=media_type,
                blob=self._blobs.put(data),
                text=data.decode("utf-8", "replace")
                if textual and len(data) <= _INLINE_TEXT_BYTES
                else "",
            )
            for media_type, data, textual in decoded
        )
        self.displays.append(
            DisplayData(kind=DisplayKind(frame.kind), items=items, truncated=truncated)
        )
