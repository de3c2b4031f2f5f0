from __future__ import annotations

from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_tcp_to_the_hosts_loopback_listener_is_blocked(sandbox: Sandbox) -> None:
    port = sandbox.canaries.tcp.port
    code = f"""
import socket
out = []
for host in ['127.0.0.1', '127.0.0.2', '127.1.2.3', 'localhost']:
    try:
        s = socket.create_connection((host, {port}), timeout=1)
        out.append((host, 'connected'))
    except OSError as exc:
        out.append((host, type(exc).__name__))
print(out)
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK, ran.text
    assert "connected" not in ran.stdout
    sandbox.assert_usable()


def test_listening_on_a_tcp_port_is_blocked(sandbox: Sandbox) -> None:
    ran = sandbox.run("import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()")
    assert ran.result.status is ExecStatus.ERROR
    assert "PermissionError" in ran.result.message
    sandbox.assert_usable()


def test_ipv6_loopback_is_blocked(sandbox: Sandbox) -> None:
    ran = sandbox.run("import socket; socket.create_connection(('::1', 9), timeout=1)")
    assert ran.result.status is ExecStatus.ERROR
    sandbox.assert_usable()
