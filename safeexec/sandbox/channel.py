"""Length-prefixed JSON frames: the only thing that crosses the host/worker boundary.

A frame is a 4-byte big-endian length and that many bytes of UTF-8 JSON holding one object.
The host decodes frames from untrusted bytes with :class:`FrameDecoder` (bounded, strict);
the worker and the template use the blocking :func:`send_frame` / :func:`recv_frame`.
"""

from __future__ import annotations

import array
import json
import socket
import struct

__all__ = [
    "FrameDecoder",
    "ProtocolError",
    "encode_frame",
    "recv_frame",
    "recv_frame_with_fds",
    "send_frame",
    "send_frame_with_fds",
]

_HEADER = struct.Struct(">I")
MAX_FRAME_BYTES = 64 * 1024 * 1024


class ProtocolError(Exception):
    """The peer sent bytes that are not a well-formed frame."""


def encode_frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    if len(body) > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {len(body)} bytes exceeds {MAX_FRAME_BYTES}")
    return _HEADER.pack(len(body)) + body


def decode_body(body: bytes) -> dict[str, object]:
    """Parse one frame body; anything but a JSON object is a protocol error."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"frame is not JSON: {type(exc).__name__}") from None
    if not isinstance(message, dict):
        raise ProtocolError("frame is not a JSON object")
    return message


class FrameDecoder:
    """Incremental decoder for bytes read from an untrusted peer; memory stays bounded."""

    def __init__(self, *, max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[dict[str, object]]:
        """Add bytes; return the frames now complete. Raises ProtocolError on a bad frame."""
        self._buffer += data
        frames: list[dict[str, object]] = []
        while len(self._buffer) >= _HEADER.size:
            (length,) = _HEADER.unpack_from(self._buffer)
            if length > self.max_frame_bytes:
                raise ProtocolError(f"frame of {length} bytes exceeds {self.max_frame_bytes}")
            end = _HEADER.size + length
            if len(self._buffer) < end:
                break
            body = bytes(self._buffer[_HEADER.size : end])
            del self._buffer[:end]
            frames.append(decode_body(body))
        return frames


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise EOFError("channel closed")
        chunks += chunk
    return bytes(chunks)


def send_frame(sock: socket.socket, message: dict[str, object]) -> None:
    sock.sendall(encode_frame(message))


def recv_frame(sock: socket.socket) -> dict[str, object]:
    """Block for one frame; ``EOFError`` when the peer has gone."""
    (length,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    if length > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {length} bytes exceeds {MAX_FRAME_BYTES}")
    return decode_body(_recv_exact(sock, length))


def send_frame_with_fds(sock: socket.socket, message: dict[str, object], fds: list[int]) -> None:
    """Send one frame with file descriptors attached (SCM_RIGHTS) to its first byte."""
    data = encode_frame(message)
    sent = sock.sendmsg(
        [data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())]
    )
    if sent < len(data):
        sock.sendall(data[sent:])


def recv_frame_with_fds(
    sock: socket.socket, *, max_fds: int = 8
) -> tuple[dict[str, object], list[int]]:
    """Receive one frame sent by :func:`send_frame_with_fds`, with the descriptors it carried."""
    fds = array.array("i")
    data, ancillary, _flags, _addr = sock.recvmsg(
        _HEADER.size, socket.CMSG_SPACE(max_fds * fds.itemsize)
    )
    if not data:
        raise EOFError("channel closed")
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - (len(payload) % fds.itemsize)])
    header = data + _recv_exact(sock, _HEADER.size - len(data))
    (length,) = _HEADER.unpack(header)
    if length > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {length} bytes exceeds {MAX_FRAME_BYTES}")
    return decode_body(_recv_exact(sock, length)), list(fds)
