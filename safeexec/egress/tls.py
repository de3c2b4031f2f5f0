"""Read the server name (SNI) from a TLS ClientHello without terminating TLS.

The proxy checks it against the CONNECT target: a client that asks for an allowed host and
then greets another (domain fronting) is refused. Only the first handshake message is read;
nothing is decrypted and nothing is added.
"""

from __future__ import annotations

__all__ = ["ClientHelloError", "hello_length", "server_name"]

_HANDSHAKE = 0x16
_CLIENT_HELLO = 0x01
_SERVER_NAME = 0x0000
_HOST_NAME = 0x00
_RECORD_HEADER = 5
MAX_HELLO_BYTES = 64 * 1024


class ClientHelloError(ValueError):
    """The bytes are not a TLS ClientHello the proxy can read."""


def hello_length(head: bytes) -> int | None:
    """How many bytes the records holding the ClientHello take, once ``head`` shows it (None:
    read more). Raises :class:`ClientHelloError` if ``head`` does not start a TLS handshake."""
    if len(head) < _RECORD_HEADER + 4:
        return None
    if head[0] != _HANDSHAKE or head[1] != 3:
        raise ClientHelloError("the connection did not start with a TLS handshake")
    if head[5] != _CLIENT_HELLO:
        raise ClientHelloError("the first handshake message is not a ClientHello")
    body = int.from_bytes(head[6:9], "big")
    if body + 4 > MAX_HELLO_BYTES:
        raise ClientHelloError(f"a ClientHello of {body} bytes is too large")
    # The message may span records; each record adds a header.
    total, offset, need = 0, 0, body + 4
    while need > 0:
        if len(head) < offset + _RECORD_HEADER:
            return None
        length = int.from_bytes(head[offset + 3 : offset + 5], "big")
        if head[offset] != _HANDSHAKE or length == 0:
            raise ClientHelloError("the ClientHello is split across foreign records")
        total += _RECORD_HEADER + length
        need -= length
        offset = total
    return total


def server_name(data: bytes) -> str | None:
    """The host name in the ClientHello that ``data`` (complete, see :func:`hello_length`)
    holds, lowercased; None when it names none."""
    message = _handshake_bytes(data)
    reader = _Reader(message)
    if reader.u8() != _CLIENT_HELLO:
        raise ClientHelloError("not a ClientHello")
    hello = _Reader(reader.take(reader.u24()))
    hello.take(2 + 32)  # version, random
    hello.take(hello.u8())  # session id
    hello.take(hello.u16())  # cipher suites
    hello.take(hello.u8())  # compression methods
    if hello.done():
        return None
    extensions = _Reader(hello.take(hello.u16()))
    names: list[str] = []
    while not extensions.done():
        kind, body = extensions.u16(), extensions.take(extensions.u16())
        if kind != _SERVER_NAME:
            continue
        entries = _Reader(body)
        entries = _Reader(entries.take(entries.u16()))
        while not entries.done():
            name_type, name = entries.u8(), entries.take(entries.u16())
            if name_type == _HOST_NAME:
                try:
                    names.append(name.decode("ascii").lower().rstrip("."))
                except UnicodeDecodeError as exc:
                    raise ClientHelloError("the server name is not ASCII") from exc
    if len(names) > 1:
        raise ClientHelloError("the ClientHello names more than one server")
    return names[0] if names else None


def _handshake_bytes(data: bytes) -> bytes:
    """The handshake payload of the records in ``data``, joined."""
    parts, offset = [], 0
    while offset < len(data):
        length = int.from_bytes(data[offset + 3 : offset + 5], "big")
        parts.append(data[offset + _RECORD_HEADER : offset + _RECORD_HEADER + length])
        offset += _RECORD_HEADER + length
    return b"".join(parts)


class _Reader:
    """Bounds-checked reads from a byte string; a short read is a :class:`ClientHelloError`."""

    __slots__ = ("data", "offset")

    def __init__(self, data: bytes) -> None:
        self.data, self.offset = data, 0

    def take(self, size: int) -> bytes:
        if self.offset + size > len(self.data):
            raise ClientHelloError("the ClientHello is truncated")
        chunk = self.data[self.offset : self.offset + size]
        self.offset += size
        return chunk

    def u8(self) -> int:
        return self.take(1)[0]

    def u16(self) -> int:
        return int.from_bytes(self.take(2), "big")

    def u24(self) -> int:
        return int.from_bytes(self.take(3), "big")

    def done(self) -> bool:
        return self.offset >= len(self.data)
