from __future__ import annotations

from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_udp_to_the_hosts_loopback_is_blocked(sandbox: Sandbox) -> None:
    port = sandbox.canaries.udp.port
    code = f"""
import socket
out = []
for host in ['127.0.0.1', '127.0.0.53', '127.9.9.9']:
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.sendto(b'escaped', (host, {port}))
        out.append((host, 'sent'))
    except OSError as exc:
        out.append((host, type(exc).__name__))
print(out)
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK, ran.text
    assert "sent" not in ran.stdout
    sandbox.assert_usable()


def test_raw_and_packet_sockets_are_blocked(sandbox: Sandbox) -> None:
    code = """
import socket
out = []
for family, kind in [(socket.AF_INET, socket.SOCK_RAW), (socket.AF_PACKET, socket.SOCK_RAW),
                     (socket.AF_NETLINK, socket.SOCK_RAW), (socket.AF_INET6, socket.SOCK_DGRAM)]:
    try:
        socket.socket(family, kind)
        out.append('opened')
    except OSError as exc:
        out.append(type(exc).__name__)
print(out)
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK, ran.text
    assert "opened" not in ran.stdout
