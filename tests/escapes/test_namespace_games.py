from __future__ import annotations

import json
from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_namespace_games_are_refused(sandbox: Sandbox) -> None:
    code = """
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
out = {}
out['unshare_user'] = libc.unshare(0x10000000)
out['unshare_net'] = libc.unshare(0x40000000)
out['unshare_mount'] = libc.unshare(0x00020000)
try:
    fd = os.open('/proc/1/ns/net', os.O_RDONLY)
    out['setns'] = libc.setns(fd, 0)
except OSError:
    out['setns'] = -1
out['chroot'] = libc.chroot(b'.')
# clone(CLONE_NEWUSER | SIGCHLD) through the raw syscall
libc.syscall.restype = ctypes.c_long
out['clone_newuser'] = libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)
print(json.dumps(out))
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
print('plain fork works')
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK, ran.text
    first, second = ran.stdout.splitlines()
    results = json.loads(first)
    assert len(results) == 6, results
    assert set(results.values()) == {-1}
    assert second == "plain fork works"
    sandbox.assert_usable()


def test_the_tty_injection_ioctl_is_refused(sandbox: Sandbox) -> None:
    code = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open('/dev/null', os.O_RDONLY)
print(libc.ioctl(fd, 0x5412, ctypes.c_char_p(b'x')), ctypes.get_errno())
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK, ran.text
    assert ran.stdout.split() == ["-1", "1"]  # EPERM from seccomp, not ENOTTY from the tty layer
