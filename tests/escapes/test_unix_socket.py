from __future__ import annotations

from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_connecting_to_a_host_unix_service_is_blocked(sandbox: Sandbox) -> None:
    path = sandbox.canaries.unix_path
    code = f"""
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect({str(path)!r})
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.ERROR
    assert "PermissionError" in ran.result.message
    sandbox.assert_usable()


def test_abstract_unix_sockets_are_blocked(sandbox: Sandbox) -> None:
    code = """
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect('\\0/tmp/.X11-unix/X0')
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.ERROR
    sandbox.assert_usable()


def test_socketpair_still_works_for_local_plumbing(sandbox: Sandbox) -> None:
    code = """
import socket
a, b = socket.socketpair()
a.sendall(b'ping')
print(b.recv(4))
import asyncio
print(asyncio.run(asyncio.sleep(0, result='loop ok')))
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK, ran.text
    assert ran.stdout.split() == ["b'ping'", "loop", "ok"]
