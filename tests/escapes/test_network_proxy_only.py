"""With [network] on, the session reaches its egress proxy and nothing else.

The suite's network payloads run again here against a native session whose policy allows a
host (so it has the proxy channel, the socket connector and HTTP_PROXY), under the same
canaries; then the attacks that aim at the proxy itself. The allowed name resolves to 127.0.0.1
and is not in ``private_hosts``: the proxy refuses it too, so nothing here ever connects.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from pathlib import Path

import pytest
from escape_support import Canaries, Sandbox

# The network payloads of the suite, collected again in this module with its ``sandbox``.
from test_loopback_tcp import (  # noqa: F401
    test_ipv6_loopback_is_blocked,
    test_listening_on_a_tcp_port_is_blocked,
    test_tcp_to_the_hosts_loopback_listener_is_blocked,
)
from test_loopback_udp import (  # noqa: F401
    test_raw_and_packet_sockets_are_blocked,
    test_udp_to_the_hosts_loopback_is_blocked,
)
from test_unix_socket import (  # noqa: F401
    test_abstract_unix_sockets_are_blocked,
    test_connecting_to_a_host_unix_service_is_blocked,
    test_socketpair_still_works_for_local_plumbing,
)

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.egress import NetworkPolicy
from safeexec.egress.network_policy import IPAddress
from safeexec.model.values import ExecStatus, Limits, NetworkConnection, NetworkVerdict


def _resolve(host: str, port: int) -> list[IPAddress]:
    if host != "allowed.test":
        raise OSError(f"{host}: unknown to the escape suite's resolver")
    return [ipaddress.ip_address("127.0.0.1")]


@pytest.fixture(scope="module")
def network_backend(canaries: Canaries) -> Iterator[NativeBackend]:
    backend = NativeBackend(disk_bytes=256 * 1024 * 1024, pool_size=1, resolver=_resolve)
    backend.start()
    yield backend
    backend.close()


@pytest.fixture
def sandbox(
    network_backend: NativeBackend, canaries: Canaries, tmp_path: Path
) -> Iterator[Sandbox]:
    blobs = BlobStore(tmp_path / "blobs")
    workdir = tmp_path / "work"
    workdir.mkdir()
    policy = NetworkPolicy(allow=("allowed.test:443", f"allowed.test:{canaries.tcp.port}"))
    spec = SessionSpec(workdir=workdir, limits=Limits(), blobs=blobs, network=policy)
    session = network_backend.open(spec)
    try:
        yield Sandbox(session, blobs, canaries)
    finally:
        session.close()


def _network(ran_events: tuple[object, ...]) -> list[NetworkConnection]:
    return [e for e in ran_events if isinstance(e, NetworkConnection)]


def test_the_proxy_refuses_the_canary_by_address_by_name_and_by_allowed_name(
    sandbox: Sandbox,
) -> None:
    port = sandbox.canaries.tcp.port
    code = f"""
import urllib.request
out = []
for url in ['http://127.0.0.1:{port}/', 'http://localhost:{port}/', 'http://allowed.test:{port}/',
            'https://allowed.test/', 'http://[::1]:{port}/']:
    try:
        urllib.request.urlopen(url, timeout=5)
        out.append('fetched')
    except Exception as exc:
        out.append(type(exc).__name__)
print(out)
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK, ran.text
    assert "fetched" not in ran.stdout
    events = _network(ran.result.events)
    assert len(events) == 5
    assert all(e.verdict is NetworkVerdict.REFUSED and e.address == "" for e in events)
    assert {e.key for e in events} >= {"network.allow", "network.private_hosts"}
    sandbox.assert_usable()


def test_a_hand_made_tunnel_over_the_channel_is_still_checked(sandbox: Sandbox) -> None:
    port = sandbox.canaries.tcp.port
    code = f"""
import os, socket
chan = socket.socket(fileno=os.dup(int(os.environ['SAFEEXEC_EGRESS_FD'])))
chan.send(b'c')
_, [fd], _, _ = socket.recv_fds(chan, 1, 1)
ours = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=fd)
ours.sendall(b'CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n\\r\\n')
print(ours.recv(200))
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK, ran.text
    assert "403" in ran.stdout
    sandbox.assert_usable()


def test_the_connector_does_not_let_a_socket_reach_any_other_address(sandbox: Sandbox) -> None:
    port = sandbox.canaries.tcp.port
    code = f"""
import socket
out = []
for target in [('127.0.0.1', {port}), ('10.0.0.1', 3128), ('127.0.0.2', 3128)]:
    s = socket.socket()
    out.append(s.connect_ex(target))
print(out)
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK, ran.text
    assert "0" not in ran.stdout.strip("[]\n").split(", ")
    sandbox.assert_usable()
