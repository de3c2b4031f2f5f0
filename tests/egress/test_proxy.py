"""The egress proxy against loopback upstreams: what it lets through, what it refuses, and the
audit event of each connection. Test names resolve to 127.0.0.1 through an injected resolver,
with the private-range refusal overridden for them (``private_hosts``)."""

from __future__ import annotations

import http.client
import itertools
import socket
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from safeexec.egress import EgressProxy, NetworkPolicy
from safeexec.errors import ConfigurationError
from safeexec.model.values import NetworkConnection, NetworkVerdict
from tests.egress.loopback import (
    CertificateAuthority,
    canned_upstream,
    connect_through,
    http_upstream,
    mapping_resolver,
    proxy_front,
    read_all,
)

NAMES = {"api.test": "127.0.0.1", "files.test": "127.0.0.1", "other.test": "127.0.0.1"}


def _proxy(port: int, **options: object) -> EgressProxy:
    policy = NetworkPolicy(
        allow=(f"api.test:{port}", f"*.mirror.test:{port}"),
        private_hosts=("api.test", "a.mirror.test"),
        **options,
    )
    resolver = mapping_resolver({**NAMES, "a.mirror.test": "127.0.0.1"})
    ticks = itertools.count()
    return EgressProxy(policy, resolver=resolver, clock=lambda: float(next(ticks)))


def _one_event(proxy: EgressProxy) -> NetworkConnection:
    assert proxy.wait_idle(10)
    events = proxy.take_events()
    assert len(events) == 1, events
    return events[0]


def _get(sock_port: int, host: str, path: str = "/") -> bytes:
    return (
        f"GET http://{host}:{sock_port}{path} HTTP/1.1\r\nHost: {host}:{sock_port}\r\n"
        "Proxy-Authorization: Basic c2VjcmV0\r\n\r\n"
    ).encode()


@pytest.fixture
def upstream() -> Iterator[int]:
    with http_upstream() as port:
        yield port


def test_plain_http_to_an_allowed_host_is_relayed_and_audited(upstream: int) -> None:
    proxy = _proxy(upstream)
    client = connect_through(proxy)
    client.sendall(_get(upstream, "api.test", "/hello"))
    reply = read_all(client)
    assert reply.startswith(b"HTTP/1.") and reply.endswith(
        b"host=api.test:%d path=/hello" % upstream
    )
    event = _one_event(proxy)
    assert event.verdict is NetworkVerdict.ALLOWED
    assert (event.host, event.port, event.method, event.address) == (
        "api.test",
        upstream,
        "GET",
        "127.0.0.1",
    )
    # What the upstream sent; the client got its head with ``Connection: close`` said.
    assert event.bytes_received == len(reply) - len(b"Connection: close\r\n")
    assert event.bytes_sent > 0 and event.duration_ms > 0 and event.rule == ""


def test_proxy_headers_are_not_forwarded(upstream: int) -> None:
    proxy = _proxy(upstream)
    client = connect_through(proxy)
    client.sendall(_get(upstream, "api.test"))
    read_all(client)
    # What went upstream: the head the proxy forwards is counted, the proxy's header is not in it.
    event = _one_event(proxy)
    assert event.bytes_sent == len(
        f"GET / HTTP/1.1\r\nHost: api.test:{upstream}\r\nConnection: close\r\n\r\n"
    )


def test_a_wildcard_entry_covers_subdomains(upstream: int) -> None:
    proxy = _proxy(upstream)
    client = connect_through(proxy)
    client.sendall(_get(upstream, "a.mirror.test"))
    assert read_all(client).endswith(b"path=/")
    assert _one_event(proxy).verdict is NetworkVerdict.ALLOWED


def test_a_host_not_in_allow_gets_403_naming_the_key(upstream: int) -> None:
    proxy = _proxy(upstream)
    client = connect_through(proxy)
    client.sendall(_get(upstream, "other.test"))
    reply = read_all(client)
    assert reply.startswith(b"HTTP/1.1 403") and b"X-Safeexec-Rule: SX650" in reply
    event = _one_event(proxy)
    assert (event.verdict, event.rule, event.key) == (
        NetworkVerdict.REFUSED,
        "SX650",
        "network.allow",
    )
    assert event.address == "" and event.bytes_received == 0


def test_a_denied_host_is_refused_even_when_allowed(upstream: int) -> None:
    proxy = _proxy(upstream, deny=("api.test",))
    client = connect_through(proxy)
    client.sendall(_get(upstream, "api.test"))
    assert read_all(client).startswith(b"HTTP/1.1 403")
    assert _one_event(proxy).key == "network.deny"


def test_a_name_resolving_to_loopback_is_refused_without_the_override(upstream: int) -> None:
    policy = NetworkPolicy(allow=(f"api.test:{upstream}",))
    proxy = EgressProxy(policy, resolver=mapping_resolver(NAMES))
    client = connect_through(proxy)
    client.sendall(_get(upstream, "api.test"))
    assert read_all(client).startswith(b"HTTP/1.1 403")
    event = _one_event(proxy)
    assert (event.rule, event.key) == ("SX652", "network.private_hosts")
    assert "loopback" in event.reason and event.address == ""


def test_the_host_header_must_agree_with_the_url(upstream: int) -> None:
    proxy = _proxy(upstream)
    client = connect_through(proxy)
    client.sendall(f"GET http://api.test:{upstream}/ HTTP/1.1\r\nHost: other.test\r\n\r\n".encode())
    assert read_all(client).startswith(b"HTTP/1.1 400")
    assert _one_event(proxy).rule == "SX656"


def test_connections_past_max_connections_are_refused(upstream: int) -> None:
    proxy = _proxy(upstream, max_connections=2)
    for _ in range(3):
        client = connect_through(proxy)
        client.sendall(_get(upstream, "api.test"))
        reply = read_all(client)
    assert reply.startswith(b"HTTP/1.1 403")
    assert proxy.wait_idle(10)
    verdicts = [(e.verdict, e.key) for e in proxy.take_events()]
    assert verdicts.count((NetworkVerdict.ALLOWED, "")) == 2
    assert (NetworkVerdict.REFUSED, "network.max_connections") in verdicts


def test_max_bytes_cuts_a_download_mid_stream(upstream: int) -> None:
    proxy = _proxy(upstream, max_bytes=100_000)
    client = connect_through(proxy)
    client.sendall(_get(upstream, "api.test", "/size/5000000"))
    reply = read_all(client)
    assert len(reply) <= 100_000
    event = _one_event(proxy)
    assert (event.verdict, event.rule, event.key) == (
        NetworkVerdict.CUT,
        "SX654",
        "network.max_bytes",
    )
    assert event.bytes_sent + event.bytes_received <= 100_000
    assert proxy.statistics().bytes_total == 100_000


def test_a_silent_client_is_cut_after_idle_seconds(upstream: int) -> None:
    proxy = _proxy(upstream, idle_seconds=0.2)
    client = connect_through(proxy)
    client.sendall(b"GET http://api.test")  # and nothing more
    assert read_all(client) == b""
    event = _one_event(proxy)
    assert (event.verdict, event.rule, event.key) == (
        NetworkVerdict.CUT,
        "SX657",
        "network.idle_seconds",
    )


@pytest.fixture
def tls_upstream(tmp_path: Path) -> Iterator[tuple[int, CertificateAuthority]]:
    ca = CertificateAuthority(tmp_path, ("api.test", "other.test"))
    with http_upstream(tls=ca.server_context()) as port:
        yield port, ca


def _tunnel(proxy: EgressProxy, target: str) -> tuple[bytes, socket.socket]:
    client = connect_through(proxy)
    client.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = client.recv(1)
        if not chunk:
            break
        head += chunk
    return head, client


def test_connect_passes_tls_through_to_an_allowed_host(
    tls_upstream: tuple[int, CertificateAuthority],
) -> None:
    port, ca = tls_upstream
    proxy = _proxy(port)
    head, client = _tunnel(proxy, f"api.test:{port}")
    assert head.startswith(b"HTTP/1.1 200")
    with ca.client_context().wrap_socket(client, server_hostname="api.test") as tls:
        tls.sendall(b"GET /x HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n")
        assert read_all(tls).endswith(b"host=api.test path=/x")
    event = _one_event(proxy)
    assert (event.method, event.verdict, event.address) == (
        "CONNECT",
        NetworkVerdict.ALLOWED,
        "127.0.0.1",
    )
    assert event.bytes_sent > 0 and event.bytes_received > 0


def test_connect_with_an_sni_naming_another_host_is_cut(
    tls_upstream: tuple[int, CertificateAuthority],
) -> None:
    port, ca = tls_upstream
    proxy = _proxy(port)
    head, client = _tunnel(proxy, f"api.test:{port}")
    assert head.startswith(b"HTTP/1.1 200")
    with pytest.raises((ssl.SSLError, OSError)):
        ca.client_context().wrap_socket(client, server_hostname="other.test")
    event = _one_event(proxy)
    assert (event.verdict, event.rule) == (NetworkVerdict.REFUSED, "SX653")
    assert "'other.test'" in event.reason and event.address == ""


def test_connect_carrying_no_tls_is_refused(tls_upstream: tuple[int, CertificateAuthority]) -> None:
    port, _ca = tls_upstream
    proxy = _proxy(port)
    _head, client = _tunnel(proxy, f"api.test:{port}")
    client.sendall(b"SSH-2.0-OpenSSH\r\n")
    assert read_all(client) == b""
    assert _one_event(proxy).rule == "SX653"


def test_connect_to_a_refused_host_gets_403(tls_upstream: tuple[int, CertificateAuthority]) -> None:
    port, _ca = tls_upstream
    proxy = _proxy(port)
    head, _client = _tunnel(proxy, f"other.test:{port}")
    assert head.startswith(b"HTTP/1.1 403")
    assert _one_event(proxy).key == "network.allow"


def test_urllib_reaches_an_allowed_host_through_a_tcp_front(
    tls_upstream: tuple[int, CertificateAuthority],
) -> None:
    port, ca = tls_upstream
    proxy = _proxy(port)
    with proxy_front(proxy) as front:
        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({"https": f"http://127.0.0.1:{front}"}),
            urllib.request.HTTPSHandler(context=ca.client_context()),
        )
        with opener.open(f"https://api.test:{port}/via-urllib", timeout=10) as reply:
            assert reply.read() == b"host=api.test:%d path=/via-urllib" % port
        with pytest.raises(urllib.error.URLError, match="403"):
            opener.open(f"https://other.test:{port}/", timeout=10)


def test_an_empty_allowlist_gets_no_proxy() -> None:
    with pytest.raises(ConfigurationError, match="allow is empty"):
        EgressProxy(NetworkPolicy())


def test_a_malformed_entry_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="port"):
        EgressProxy(NetworkPolicy(allow=("pypi.org:0",)))


def test_a_second_request_on_one_connection_is_cut(upstream: int) -> None:
    proxy = _proxy(upstream)
    client = connect_through(proxy)
    # The second request would reach the checked address under another Host.
    client.sendall(_get(upstream, "api.test") + b"GET / HTTP/1.1\r\nHost: other.test\r\n\r\n")
    reply = read_all(client)
    assert reply.startswith(b"HTTP/1.1 400")
    event = _one_event(proxy)
    assert (event.rule, event.address) == ("SX656", "")


def test_a_plain_answer_tells_the_client_the_connection_ends_with_it(upstream: int) -> None:
    # The upstream answers HTTP/1.1 with no Connection header (keep-alive, by default); the
    # proxy ends the connection after this one request, so the client must be told.
    proxy = _proxy(upstream)
    client = connect_through(proxy)
    client.sendall(_get(upstream, "api.test", "/said"))
    head, _, body = read_all(client).partition(b"\r\n\r\n")
    lines = [line.lower() for line in head.split(b"\r\n")]
    assert lines.count(b"connection: close") == 1
    assert body == b"host=api.test:%d path=/said" % upstream


@pytest.mark.parametrize("pieces", [1, 7, 200])
def test_hop_by_hop_answer_headers_are_replaced_in_every_head(pieces: int) -> None:
    answer = (
        b"HTTP/1.1 100 Continue\r\nKeep-Alive: timeout=5\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nConnection: keep-alive, X-Hop\r\nX-Hop: a\r\n  folded\r\n"
        b"Keep-Alive: timeout=5\r\nContent-Length: 15\r\nX-End: kept\r\n\r\n"
        b"\r\n\r\nHTTP/1.1 200 OK"
    )
    with canned_upstream(answer, pieces=pieces) as port:
        proxy = _proxy(port)
        client = connect_through(proxy)
        client.sendall(_get(port, "api.test"))
        assert read_all(client) == (
            b"HTTP/1.1 100 Continue\r\nConnection: close\r\n\r\n"
            b"HTTP/1.1 200 OK\r\nContent-Length: 15\r\nX-End: kept\r\nConnection: close\r\n\r\n"
            # The body is passed as it is, even where it looks like a head.
            b"\r\n\r\nHTTP/1.1 200 OK"
        )
        assert _one_event(proxy).bytes_received == len(answer)


@pytest.mark.parametrize("answer", [b"not http at all\r\n\r\nrest", b"HTTP/1.1 200 OK\r\nX: cut"])
def test_an_answer_without_a_whole_head_passes_untouched(answer: bytes) -> None:
    with canned_upstream(answer, pieces=3) as port:
        proxy = _proxy(port)
        client = connect_through(proxy)
        client.sendall(_get(port, "api.test"))
        assert read_all(client) == answer


def test_a_keep_alive_client_opens_a_connection_for_each_request(upstream: int) -> None:
    # http.client keeps a connection unless the answer says it closes: told, it opens a new
    # one for the next request instead of sending it where the proxy would cut it.
    proxy = _proxy(upstream)
    with proxy_front(proxy) as front:
        connection = http.client.HTTPConnection("127.0.0.1", front, timeout=10)
        for path in ("/one", "/two", "/three"):
            connection.request("GET", f"http://api.test:{upstream}{path}")
            assert connection.getresponse().read().endswith(path.encode())
        connection.close()
        assert proxy.wait_idle(10)
        events = proxy.take_events()
    assert [e.verdict for e in events] == [NetworkVerdict.ALLOWED] * 3


def test_a_request_body_is_carried_up_to_its_length_only(upstream: int) -> None:
    proxy = _proxy(upstream)
    client = connect_through(proxy)
    head = (
        f"POST http://api.test:{upstream}/ HTTP/1.1\r\nHost: api.test:{upstream}\r\n"
        "Content-Length: 5\r\n\r\n"
    ).encode()
    client.sendall(head + b"12345")
    client.sendall(b"GET / HTTP/1.1\r\nHost: other.test\r\n\r\n")
    read_all(client)
    event = _one_event(proxy)
    # Refused at the head when both sends arrive in one read, cut in the relay otherwise; the
    # upstream never sees more than the 5 bytes of the body after the forwarded head.
    assert event.rule == "SX656"
    assert event.verdict in (NetworkVerdict.REFUSED, NetworkVerdict.CUT)
    forwarded = f"POST / HTTP/1.1\r\nHost: api.test:{upstream}\r\nContent-Length: 5\r\n"
    assert event.bytes_sent <= len(forwarded) + len("Connection: close\r\n\r\n") + 5


def test_chunked_request_bodies_are_refused(upstream: int) -> None:
    proxy = _proxy(upstream)
    client = connect_through(proxy)
    client.sendall(
        (
            f"POST http://api.test:{upstream}/ HTTP/1.1\r\nHost: api.test:{upstream}\r\n"
            "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        ).encode()
    )
    assert read_all(client).startswith(b"HTTP/1.1 400")
    assert _one_event(proxy).rule == "SX656"


def test_sockets_past_max_connections_open_at_once_get_no_thread(upstream: int) -> None:
    proxy = _proxy(upstream, max_connections=2)
    held = [connect_through(proxy) for _ in range(2)]  # open, silent: each holds a thread
    extra = connect_through(proxy)
    assert read_all(extra) == b""
    events = proxy.take_events()
    assert [(e.verdict, e.key) for e in events] == [
        (NetworkVerdict.REFUSED, "network.max_connections")
    ]
    assert proxy.statistics().active == 2
    for sock in held:
        sock.close()
    assert proxy.wait_idle(10)
