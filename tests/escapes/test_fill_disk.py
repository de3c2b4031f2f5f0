from __future__ import annotations

from typing import TYPE_CHECKING

from safeexec.backends.workdir import remove_tree
from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_one_huge_file_stops_at_the_file_size_limit(sandbox: Sandbox) -> None:
    code = """
with open('big.bin', 'wb') as fh:
    while True:
        fh.write(b'x' * (1 << 20))
"""
    ran = sandbox.run(code, wall_seconds=20.0)
    assert ran.result.status is ExecStatus.ERROR
    assert "File too large" in ran.result.message
    assert (sandbox.session.workdir / "big.bin").stat().st_size <= 64 * 1024 * 1024
    sandbox.assert_usable()


def test_many_files_stop_at_the_disk_budget(sandbox: Sandbox) -> None:
    budget = sandbox.session.disk_bytes
    code = """
import os
block = os.urandom(1 << 20)
n = 0
while True:
    with open(f'fill-{n}.bin', 'wb') as fh:
        for _ in range(32):
            fh.write(block)
    n += 1
"""
    ran = sandbox.run(code, wall_seconds=60.0, cpu_seconds=60.0)
    assert ran.result.status is ExecStatus.LIMIT_EXCEEDED, ran.result.message
    assert "disk budget" in ran.result.message
    used = sum(p.stat().st_size for p in sandbox.session.workdir.glob("fill-*"))
    assert budget < used < budget + 1024 * 1024 * 1024  # stopped within one poll interval
    # Where the workdir is no size-bounded mount, a session over budget has every call
    # stopped, however quick: the host clears the workdir.
    for path in sandbox.session.workdir.glob("fill-*"):
        path.unlink()
    sandbox.assert_usable()


def test_filling_the_disk_from_the_background_is_stopped_while_idle(sandbox: Sandbox) -> None:
    code = """
import os
if os.fork() == 0:
    block = os.urandom(1 << 20)
    n = 0
    while True:
        with open(f'.tmp/bg-{n}.bin', 'wb') as fh:
            for _ in range(32):
                fh.write(block)
        n += 1
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK, ran.text
    import time

    deadline = time.monotonic() + 60
    while sandbox.session.process_ids() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sandbox.session.process_ids() == []
    ran = sandbox.run("print('back')")
    assert ran.result.state_lost and "disk budget" in ran.result.message
    # Over its budget, every call of the session is stopped, however quick (a cleanup cell too,
    # if a poll of the budget falls inside it): the caller (here the host) clears the workdir.
    for written in (sandbox.session.workdir / ".tmp").glob("bg-*"):
        written.unlink()
    sandbox.assert_usable()


def test_millions_of_empty_files_are_stopped(sandbox: Sandbox) -> None:
    code = """
import os
os.mkdir('many')
n = 0
while True:
    open(f'many/{n}', 'w').close()
    n += 1
"""
    ran = sandbox.run(code, wall_seconds=60.0, cpu_seconds=60.0)
    assert ran.result.status is ExecStatus.LIMIT_EXCEEDED, ran.result.message
    assert "entries" in ran.result.message
    # Over its budget, every call of the session is stopped, however quick: the caller (here
    # the host) clears the workdir.
    ran = sandbox.run("print('over budget')")
    assert ran.result.status is ExecStatus.LIMIT_EXCEEDED, ran.text
    remove_tree(str(sandbox.session.workdir / "many"))
    sandbox.assert_usable()


def test_preallocating_past_the_file_size_limit_is_refused(sandbox: Sandbox) -> None:
    """``fallocate`` with ``FALLOC_FL_KEEP_SIZE`` allocates blocks past the file's size, which
    ``RLIMIT_FSIZE`` does not bound: one call would fill the filesystem before a poll of the
    budget, and a named file stays after the kill. Refused without a workdir mount."""
    code = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
fd = os.open('pre.bin', os.O_CREAT | os.O_WRONLY, 0o600)
if libc.fallocate(fd, 1, 0, 512 << 20) != 0:  # FALLOC_FL_KEEP_SIZE
    print("refused", ctypes.get_errno())
"""
    ran = sandbox.run(code, wall_seconds=30.0)
    held = (sandbox.session.workdir / "pre.bin").stat().st_blocks * 512
    assert held <= 64 * 1024 * 1024, f"{held >> 20} MiB preallocated, {ran.text}"
    (sandbox.session.workdir / "pre.bin").unlink()
    sandbox.assert_usable()
