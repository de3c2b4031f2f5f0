"""The host-side egress proxy of one session: HTTP CONNECT (TLS passed through untouched) and
plain HTTP, each connection checked against the session's ``[network]`` policy and audited.

Order for every connection: parse the request head → match the host on the policy → resolve it
on the host (the sandbox has no resolver) → refuse if any address is in a special range →
(CONNECT) answer 200, read the ClientHello and require its SNI to name the CONNECT host →
connect to an address that was checked (never re-resolved) → relay, counting bytes against the
session's ``max_bytes`` as they pass, closing both ends the moment it is reached.

A client reaches the proxy as a connected stream socket handed to :meth:`EgressProxy.serve`,
or asks for one over a unix channel (:meth:`EgressProxy.serve_channel`): the proxy keeps one end
of a new socket pair and sends the other back. The host never takes a descriptor from the
sandbox.
"""

from __future__ import annotations

import contextlib
import ipaddress
import select
import selectors
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from safeexec.egress.catalogue import (
    BYTES_EXCEEDED,
    CONNECTIONS_EXCEEDED,
    IDLE_TIMEOUT,
    MALFORMED_REQUEST,
    SNI_MISMATCH,
)
from safeexec.egress.network_policy import (
    IPAddress,
    NetworkPolicy,
    Refusal,
    check_address,
    check_host,
    normalize_host,
)
from safeexec.egress.tls import MAX_HELLO_BYTES, ClientHelloError, hello_length, server_name
from safeexec.errors import ConfigurationError
from safeexec.model.fieldwise import Fieldwise
from safeexec.model.values import NetworkConnection, NetworkVerdict

__all__ = [
    "EgressProxy",
    "EgressStatistics",
    "Resolver",
    "system_resolver",
]

Resolver = Callable[[str, int], Sequence[IPAddress]]
"""``(host, port) -> addresses``; raises ``OSError`` when the name does not resolve."""

MAX_HEAD_BYTES = 16 * 1024
MAX_EVENTS = 256  # kept between two drains; past it, only counted
_CHUNK = 256 * 1024
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "upgrade"}
)


def system_resolver(host: str, port: int) -> list[IPAddress]:
    """The host's resolver (``getaddrinfo``), addresses in its order, without duplicates."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: dict[IPAddress, None] = {}
    for _family, _type, _proto, _name, sockaddr in infos:
        seen.setdefault(ipaddress.ip_address(str(sockaddr[0]).split("%")[0]), None)
    return list(seen)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class EgressStatistics(Fieldwise):
    """What the proxy has done so far: connections opened, refused and open now, bytes."""

    opened: int
    refused: int
    active: int
    bytes_total: int
    events_dropped: int


class _Refused(Exception):
    """A connection the policy refuses (``refusal``), or cannot serve (``status``)."""

    def __init__(self, refusal: Refusal, status: int = 403) -> None:
        super().__init__(refusal.reason)
        self.refusal, self.status = refusal, status


class _Cut(Exception):
    """A limit reached while the connection was open."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.reason)
        self.refusal = refusal


@dataclass(slots=True)
class _Connection:
    """One connection's audit record as it is being filled in."""

    started: float
    host: str = ""
    port: int = 0
    method: str = ""
    address: str = ""
    sent: int = 0
    received: int = 0


class EgressProxy:
    """The proxy for one session; thread-safe, each connection served on a thread of its own.

    ``resolver`` and ``clock`` are injectable (tests map their names to loopback servers).
    Events are taken with :meth:`take_events`; :meth:`close` ends every connection.
    """

    def __init__(
        self,
        policy: NetworkPolicy,
        *,
        resolver: Resolver = system_resolver,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not policy.enabled:
            raise ConfigurationError(
                "policy.allow is empty: a session without network gets no proxy; "
                "allow a host, e.g. NetworkPolicy(allow=('pypi.org',))"
            )
        try:  # malformed entries fail here, not at the first connection
            policy.allow_patterns()
            policy.deny_patterns()
        except ValueError as exc:
            raise ConfigurationError(f"policy={policy!r}: {exc}") from exc
        self._policy = policy
        self._resolver = resolver
        self._clock = clock
        self._lock = threading.Lock()
        self._events: list[NetworkConnection] = []
        self._dropped = 0
        self._opened = 0
        self._refused = 0
        self._bytes = 0
        self._sockets: set[socket.socket] = set()
        self._upstreams: dict[socket.socket, socket.socket] = {}  # client -> its upstream
        self._idle = threading.Condition(self._lock)
        self._closed = False

    # -- public API ---------------------------------------------------------------------------

    def serve(self, client: socket.socket) -> None:
        """Serve ``client`` (a connected stream socket the proxy now owns) on a new thread."""
        with self._lock:
            full = len(self._sockets) >= self._policy.max_connections
            if not (self._closed or full):
                self._sockets.add(client)
        if self._closed:
            client.close()
        elif full:
            # Not even a thread to read its head: the session holds max_connections open.
            client.close()
            self._record(_Connection(started=self._clock()), NetworkVerdict.REFUSED, self._full())
        else:
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def serve_channel(self, channel: socket.socket) -> threading.Thread:
        """Answer every request on ``channel`` (a unix ``SOCK_SEQPACKET`` socket) with one end
        of a new stream socket pair, sent as an SCM_RIGHTS descriptor, whose other end the
        proxy serves; until the channel closes. Returns the thread doing it."""
        thread = threading.Thread(target=self._answer, args=(channel,), daemon=True)
        thread.start()
        return thread

    def take_events(self) -> list[NetworkConnection]:
        """The connections finished since the last call, oldest first."""
        with self._lock:
            events, self._events = self._events, []
            return events

    def statistics(self) -> EgressStatistics:
        with self._lock:
            return EgressStatistics(
                opened=self._opened,
                refused=self._refused,
                active=len(self._sockets),
                bytes_total=self._bytes,
                events_dropped=self._dropped,
            )

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no connection is open (True), at most ``timeout`` seconds."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._sockets, timeout)

    def settle(self, timeout: float) -> None:
        """Wait, at most ``timeout`` seconds, for the connections whose client has hung up to
        be recorded (a cell that read its answer and closed its socket as it ended has its
        connection in this call's events, not the next one's)."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._hung_up() and (left := deadline - time.monotonic()) > 0:
                self._idle.wait(left)

    def _hung_up(self) -> bool:
        """Whether a connection still being served has been closed at either end."""
        poller = select.poll()
        for sock in (*self._sockets, *self._upstreams.values()):
            fd = sock.fileno()
            if fd < 0:
                return True  # closed by its handler, about to be recorded
            poller.register(fd, select.POLLRDHUP)
        return bool(poller.poll(0))

    def close(self) -> None:
        """End every connection; idempotent."""
        with self._lock:
            self._closed = True
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    # -- one connection -----------------------------------------------------------------------

    def _answer(self, channel: socket.socket) -> None:
        with channel:
            while True:
                try:
                    # Plain recv: descriptors a sandbox attaches are closed by the kernel unread.
                    if not channel.recv(1):
                        return
                    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
                except OSError:
                    return
                try:
                    socket.send_fds(channel, [b"s"], [theirs.fileno()])
                except OSError:
                    ours.close()
                    return
                finally:
                    theirs.close()
                self.serve(ours)

    def _handle(self, client: socket.socket) -> None:
        record = _Connection(started=self._clock())
        upstream: socket.socket | None = None
        verdict, refusal = NetworkVerdict.ALLOWED, None
        try:
            client.settimeout(self._policy.idle_seconds)
            upstream, budget = self._open(client, record)
            with self._lock:
                self._upstreams[client] = upstream
            self._relay(client, upstream, record, budget)
        except _Refused as exc:
            verdict, refusal = NetworkVerdict.REFUSED, exc.refusal
            if exc.status:
                _answer(client, exc.status, exc.refusal)
        except _Cut as exc:
            verdict, refusal = NetworkVerdict.CUT, exc.refusal
        except TimeoutError:
            verdict, refusal = NetworkVerdict.CUT, self._idle_refusal()
        except OSError:
            pass  # either end went away: the connection ends as it stands
        except Exception as exc:  # a proxy bug must end the connection, never the host
            verdict = NetworkVerdict.REFUSED
            refusal = Refusal(rule="", key="", reason=f"proxy error: {type(exc).__name__}")
        finally:
            if upstream is not None:
                upstream.close()
            client.close()
            self._finish(client, record, verdict, refusal)

    def _open(self, client: socket.socket, record: _Connection) -> tuple[socket.socket, int | None]:
        """Parse, check, resolve and connect; the upstream socket, with what the client sent
        beyond the head already forwarded, and how many more bytes the client may send (None:
        a tunnel, unbounded; else what is left of the request's body)."""
        head, rest = _read_head(client)
        request = _parse_head(head)
        record.method, record.host, record.port = request.method, request.host, request.port
        with self._lock:
            over = self._opened >= self._policy.max_connections
            if not over:
                self._opened += 1
        if over:
            n = self._policy.max_connections
            raise _Refused(
                Refusal.of(
                    CONNECTIONS_EXCEEDED,
                    reason=f"the session has opened its {n} connections ([network] "
                    "max_connections)",
                )
            )
        refusal = check_host(self._policy, request.host, request.port)
        if refusal is not None:
            raise _Refused(refusal)
        addresses = self._resolve(request.host, request.port)
        budget: int | None = None
        if request.method == "CONNECT":
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            first = _read_client_hello(client, rest)
            _check_sni(first, request.host)
        else:
            if len(rest) > request.body_bytes:
                raise _pipelined()
            first = request.forwarded_head() + rest
            budget = request.body_bytes - len(rest)
        upstream = self._connect(addresses, request.port, record)
        self._count(record, sent=len(first))
        upstream.sendall(first)
        return upstream, budget

    def _resolve(self, host: str, port: int) -> list[IPAddress]:
        try:
            addresses = list(self._resolver(host, port))
        except (OSError, ValueError) as exc:
            raise _Refused(
                Refusal(rule="", key="", reason=f"{host} does not resolve: {exc}"), 502
            ) from exc
        if not addresses:
            raise _Refused(Refusal(rule="", key="", reason=f"{host} does not resolve"), 502)
        # Every address, not only the one used: a name with one public and one private
        # address would otherwise reach the private one whenever the public one fails.
        for address in addresses:
            refusal = check_address(self._policy, host, address)
            if refusal is not None:
                raise _Refused(refusal)
        return addresses

    def _connect(self, addresses: list[IPAddress], port: int, record: _Connection) -> socket.socket:
        errors = []
        for address in addresses:
            try:
                upstream = socket.create_connection(
                    (str(address), port), timeout=self._policy.connect_seconds
                )
            except OSError as exc:
                errors.append(f"{address}: {exc.strerror or exc}")
                continue
            upstream.settimeout(self._policy.idle_seconds)
            record.address = str(address)
            return upstream
        reason = f"could not connect to {record.host}:{port} ({'; '.join(errors)})"
        raise _Refused(Refusal(rule="", key="", reason=reason), 502)

    def _relay(
        self,
        client: socket.socket,
        upstream: socket.socket,
        record: _Connection,
        budget: int | None,
    ) -> None:
        """Copy both ways until the upstream has finished (a client that half-closes still
        gets the whole answer), or a limit or a silence ends it. ``budget``: how many more
        bytes the client may send (a plain request's body; a second request on the same
        connection would reach the checked address under another Host)."""
        peers = {client: upstream, upstream: client}
        heads = _ResponseHeads() if budget is not None else None
        with selectors.DefaultSelector() as selector:
            for end in peers:
                selector.register(end, selectors.EVENT_READ)
            while True:
                ready = selector.select(self._policy.idle_seconds)
                if not ready:
                    raise _Cut(self._idle_refusal())
                for key, _mask in ready:
                    source = key.fileobj
                    assert isinstance(source, socket.socket)
                    data = source.recv(_CHUNK)
                    if not data and source is upstream:
                        if heads is not None:
                            client.sendall(heads.rest())
                        return
                    if not data:
                        selector.unregister(source)
                        with contextlib.suppress(OSError):
                            upstream.shutdown(socket.SHUT_WR)
                        continue
                    if source is client:
                        if budget is not None:
                            budget -= len(data)
                            if budget < 0:
                                raise _Cut(_pipelined().refusal)
                        self._count(record, sent=len(data))
                    else:
                        self._count(record, received=len(data))
                        if heads is not None:
                            data = heads.feed(data)
                    peers[source].sendall(data)

    def _full(self) -> Refusal:
        n = self._policy.max_connections
        return Refusal.of(
            CONNECTIONS_EXCEEDED,
            f"the session holds {n} connections open ([network] max_connections)",
        )

    def _idle_refusal(self) -> Refusal:
        seconds = self._policy.idle_seconds
        return Refusal.of(
            IDLE_TIMEOUT, f"nothing passed for {seconds:g} s ([network] idle_seconds)"
        )

    def _count(self, record: _Connection, *, sent: int = 0, received: int = 0) -> None:
        """Charge bytes to the session before they pass; :class:`_Cut` past ``max_bytes``."""
        size = sent + received
        with self._lock:
            if self._bytes + size > self._policy.max_bytes:
                self._bytes = self._policy.max_bytes
                cut = True
            else:
                self._bytes += size
                cut = False
        if cut:
            raise _Cut(
                Refusal.of(
                    BYTES_EXCEEDED,
                    reason=f"the session's connections reached {self._policy.max_bytes} "
                    "bytes ([network] max_bytes)",
                )
            )
        record.sent += sent
        record.received += received

    def _finish(
        self,
        client: socket.socket,
        record: _Connection,
        verdict: NetworkVerdict,
        refusal: Refusal | None,
    ) -> None:
        self._record(record, verdict, refusal)  # before it counts as closed: see wait_idle
        with self._idle:
            self._sockets.discard(client)
            self._upstreams.pop(client, None)
            self._idle.notify_all()

    def _record(
        self, record: _Connection, verdict: NetworkVerdict, refusal: Refusal | None
    ) -> None:
        event = NetworkConnection(
            host=record.host,
            port=record.port,
            method=record.method,
            verdict=verdict,
            address=record.address,
            bytes_sent=record.sent,
            bytes_received=record.received,
            duration_ms=round((self._clock() - record.started) * 1000, 3),
            rule=refusal.rule if refusal is not None else "",
            key=refusal.key if refusal is not None else "",
            reason=refusal.reason if refusal is not None else "",
        )
        with self._lock:
            if verdict is NetworkVerdict.REFUSED:
                self._refused += 1
            if len(self._events) < MAX_EVENTS:
                self._events.append(event)
            else:
                self._dropped += 1


@dataclass(frozen=True, slots=True)
class _Request:
    method: str
    host: str
    port: int
    path: str
    version: str
    headers: tuple[tuple[str, str], ...]
    body_bytes: int = 0

    def forwarded_head(self) -> bytes:
        """The head sent upstream: origin-form target, no hop-by-hop or proxy headers, and
        ``Connection: close`` (one request per connection: each one checked)."""
        lines = [f"{self.method} {self.path} {self.version}"]
        lines += [f"{n}: {v}" for n, v in self.headers if n.lower() not in _HOP_BY_HOP]
        lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class _ResponseHeads:
    """The upstream's answer to a plain request, its heads rewritten for the client: hop-by-hop
    headers dropped and ``Connection: close`` said (the proxy ends the connection after one
    request, so a client told to keep it alive could send a second one, which is cut).

    Interim (1xx) heads are rewritten too, up to the final one; past it, bytes pass as they
    are. An answer that does not start with an HTTP/1.x head, or whose head is over
    :data:`MAX_HEAD_BYTES`, passes untouched: the cut of a second request still holds."""

    def __init__(self) -> None:
        self._buffer = b""
        self._final = False

    def feed(self, data: bytes) -> bytes:
        """What to send the client now for ``data`` from the upstream."""
        if self._final:
            return data
        self._buffer += data
        out = b""
        if not b"HTTP/1.".startswith(self._buffer[:7]):
            self._final = True  # not an HTTP/1.x answer: passed as it is
        while not self._final and b"\r\n\r\n" in self._buffer:
            head, _, self._buffer = self._buffer.partition(b"\r\n\r\n")
            out += _client_head(head)
            self._final = not _interim(head)
        if len(self._buffer) > MAX_HEAD_BYTES:
            self._final = True
        if self._final:
            out, self._buffer = out + self._buffer, b""
        return out

    def rest(self) -> bytes:
        """What is still held when the upstream closes (an answer cut inside its head)."""
        rest, self._buffer, self._final = self._buffer, b"", True
        return rest


def _interim(head: bytes) -> bool:
    """Whether a response head is a 1xx one (another head follows it); 101 never is (the
    proxy drops ``Upgrade``, so an upstream switching protocols answers a request not sent)."""
    status = head.split(b"\r\n", 1)[0].split(b" ")
    return len(status) > 1 and status[1].startswith(b"1") and status[1] != b"101"


def _client_head(head: bytes) -> bytes:
    """A response head with its hop-by-hop headers (and those its ``Connection`` names)
    replaced by ``Connection: close``."""
    status_line, *lines = head.split(b"\r\n")
    named = {
        token.strip().lower()
        for line in lines
        if line.partition(b":")[0].strip().lower() == b"connection"
        for token in line.partition(b":")[2].split(b",")
    }
    dropped = {n.encode() for n in _HOP_BY_HOP} | named
    kept: list[bytes] = []
    dropping = False
    for line in lines:
        if line[:1] in (b" ", b"\t"):  # an obsolete folded continuation of the line above
            if not dropping:
                kept.append(line)
            continue
        dropping = line.partition(b":")[0].strip().lower() in dropped
        if not dropping:
            kept.append(line)
    return b"\r\n".join([status_line, *kept, b"Connection: close"]) + b"\r\n\r\n"


def _malformed(reason: str) -> _Refused:
    return _Refused(Refusal.of(MALFORMED_REQUEST, reason=reason), 400)


def _read_head(client: socket.socket) -> tuple[bytes, bytes]:
    """The request head (through the blank line) and whatever followed it in the same reads."""
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        if len(buffer) > MAX_HEAD_BYTES:
            raise _malformed(f"the request head is over {MAX_HEAD_BYTES} bytes")
        chunk = client.recv(_CHUNK)
        if not chunk:
            raise _malformed("the connection closed before a complete request head")
        buffer += chunk
    head, _, rest = buffer.partition(b"\r\n\r\n")
    return head, rest


def _parse_head(head: bytes) -> _Request:
    try:
        text = head.decode("ascii")
    except UnicodeDecodeError as exc:
        raise _malformed("the request head is not ASCII") from exc
    request_line, *header_lines = text.split("\r\n")
    parts = request_line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _malformed(f"not an HTTP/1.x request line: {request_line[:200]!r}")
    method, target, version = parts
    headers = []
    for line in header_lines:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise _malformed(f"a malformed header line: {line[:200]!r}")
        headers.append((name, value.strip()))
    hosts = [v for n, v in headers if n.lower() == "host"]
    if method == "CONNECT":
        host, port = _authority(target, default_port=None)
        path = ""
    else:
        if not target.lower().startswith("http://"):
            raise _malformed(
                f"{method} {target[:200]!r}: a proxy request names an absolute http:// URL "
                "(https goes through CONNECT)"
            )
        authority, slash, path = target[len("http://") :].partition("/")
        host, port = _authority(authority, default_port=80)
        path = slash + path if slash else "/"
        if len(hosts) != 1 or _authority(hosts[0], default_port=80) != (host, port):
            raise _malformed(
                f"the Host header {hosts!r} does not name the request's host {host}:{port}"
            )
    return _Request(
        method=method,
        host=host,
        port=port,
        path=path,
        version=version,
        headers=tuple(headers),
        body_bytes=_body_bytes(headers) if method != "CONNECT" else 0,
    )


def _body_bytes(headers: list[tuple[str, str]]) -> int:
    """The request body's length: its one ``Content-Length``, else none. A chunked body is not
    carried (where it ends is what two parsers can disagree on)."""
    if any(n.lower() == "transfer-encoding" for n, _v in headers):
        raise _malformed("a request body with Transfer-Encoding is not carried; send its length")
    lengths = {v for n, v in headers if n.lower() == "content-length"}
    if not lengths:
        return 0
    value = lengths.pop()
    if lengths or not (value.isascii() and value.isdigit()):
        raise _malformed(f"an unreadable Content-Length {value!r}")
    return int(value)


def _pipelined() -> _Refused:
    return _malformed("a second request on one connection (each request opens its own)")


def _authority(text: str, *, default_port: int | None) -> tuple[str, int]:
    """``host[:port]`` or ``[v6][:port]`` as a normalized host and a port."""
    if "@" in text:
        raise _malformed(f"credentials in the authority {text[:200]!r}")
    if text.startswith("["):
        inner, _, after = text[1:].partition("]")
        host_text, port_text = inner, after.removeprefix(":")
    else:
        host_text, _, port_text = text.rpartition(":") if ":" in text else (text, "", "")
    if not port_text:
        if default_port is None:
            raise _malformed(f"CONNECT {text[:200]!r} names no port")
        port_text = str(default_port)
    if not (port_text.isascii() and port_text.isdigit()) or not 0 < int(port_text) < 65536:
        raise _malformed(f"{text[:200]!r}: the port must be a number from 1 to 65535")
    try:
        return normalize_host(host_text), int(port_text)
    except ValueError as exc:
        raise _malformed(str(exc)) from exc


def _read_client_hello(client: socket.socket, head: bytes) -> bytes:
    buffer = head
    while True:
        try:
            length = hello_length(buffer)
        except ClientHelloError as exc:
            raise _Refused(_sni_refusal(str(exc)), 0) from exc
        if length is not None and len(buffer) >= length:
            return buffer
        if len(buffer) > MAX_HELLO_BYTES + 1024:
            raise _Refused(_sni_refusal("the ClientHello is too large"), 0)
        chunk = client.recv(_CHUNK)
        if not chunk:
            raise _Refused(_sni_refusal("the tunnel closed before a ClientHello"), 0)
        buffer += chunk


def _check_sni(hello: bytes, host: str) -> None:
    try:
        name = server_name(hello)
    except ClientHelloError as exc:
        raise _Refused(_sni_refusal(str(exc)), 0) from exc
    if name != host:
        said = f"names {name!r}" if name else "names no server"
        raise _Refused(_sni_refusal(f"the ClientHello {said}, the CONNECT target is {host!r}"), 0)


def _sni_refusal(reason: str) -> Refusal:
    return Refusal.of(SNI_MISMATCH, reason=reason)


def _answer(client: socket.socket, status: int, refusal: Refusal) -> None:
    """A short plain-text answer to a request the proxy will not carry."""
    phrase = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    body = f"safeexec egress proxy: {refusal.reason}\n".encode()
    head = (
        f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nX-Safeexec-Rule: {refusal.rule or 'none'}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    with contextlib.suppress(OSError):
        client.sendall(head + body)
