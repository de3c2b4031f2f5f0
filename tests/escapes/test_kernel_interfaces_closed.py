"""Kernel interfaces that reach past every other layer, closed by seccomp as whole classes.

Kernel AIO contexts come out of the machine-wide ``fs.aio-max-nr`` (one session could take them
all and make the host's own ``io_setup`` fail with EAGAIN); inotify watches any path the code can
name, and Landlock does not mediate that, so host file events (other sessions' file names) leak;
fanotify watches whole mounts; ``memfd_secret`` holds memory outside the kernel's direct map.
Each call is made by number in a forked child, so a kill shows as its wait status.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus
from safeexec.sandbox.syscalls import syscall_number

if TYPE_CHECKING:
    from escape_support import Sandbox

PROBE = """
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def probe(name, number, *args):
    pid = os.fork()
    if pid == 0:
        result = libc.syscall(ctypes.c_long(number), *args)
        code = ctypes.get_errno()
        text = errno.errorcode.get(code, code) if result < 0 else 0
        os.write(1, f"{{name}} {{result}} {{text}}\\n".encode())
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        print(name, "killed", os.WTERMSIG(status))
ctx = ctypes.c_ulong(0)
path = ctypes.c_char_p(b"/")
{calls}
"""

# Arguments as the C library would pass them; every call is refused before it reads them.
CALLS: dict[str, str] = {
    "io_setup": "64, ctypes.byref(ctx)",
    "io_submit": "0, 1, 0",
    "io_getevents": "0, 1, 1, 0, 0",
    "io_pgetevents": "0, 1, 1, 0, 0, 0",
    "io_cancel": "0, 0, 0",
    "io_destroy": "0",
    "inotify_init": "",
    "inotify_init1": "0",
    "inotify_add_watch": "0, path, 0xfff",
    "fanotify_init": "0, 0",
    "fanotify_mark": "0, 1, 0x3b, -100, path",
    "memfd_secret": "0",
}
EXPECTED = {name: "EPERM" if name.startswith("fanotify") else "ENOSYS" for name in CALLS}


def _aio_in_use() -> int:
    return int(Path("/proc/sys/fs/aio-nr").read_text())


def _run(sandbox: Sandbox) -> dict[str, str]:
    calls = "\n".join(
        f"probe({name!r}, {syscall_number(name)}{', ' + args if args else ''})"
        for name, args in CALLS.items()
    )
    ran = sandbox.run(PROBE.format(calls=calls), wall_seconds=30)
    assert ran.result.status is ExecStatus.OK, ran.text
    seen = {}
    for line in ran.stdout.splitlines():
        name, result, code = line.split()
        seen[name] = code if result != "killed" else f"killed by {code}"
    return seen


def test_aio_inotify_fanotify_and_memfd_secret_are_refused(sandbox: Sandbox) -> None:
    aio_before = _aio_in_use()
    seen = _run(sandbox)
    assert seen == EXPECTED
    # Nothing of the machine-wide AIO pool went to the session.
    assert _aio_in_use() <= aio_before
    sandbox.assert_usable()


def test_the_probe_reports_an_allowed_call_as_its_result(sandbox: Sandbox) -> None:
    """The probe can fail: an allowed syscall comes back as its result, not as an errno."""
    code = PROBE.format(calls=f"probe('getpid', {syscall_number('getpid')})")
    ran = sandbox.run(code, wall_seconds=30)
    assert ran.result.status is ExecStatus.OK, ran.text
    _name, result, errname = ran.stdout.split()
    assert int(result) > 0 and errname == "0"
