"""What the disk budget counts beyond the workdir's names: files without a link that a process
holds through a descriptor or a mapping (not shared memory, which the memory limit owns)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from safeexec.backends.native.disk import unnamed_bytes

MIB = 1024 * 1024
Hold = Callable[[str], int]  # start a process holding a file made one way; its pid

# Runs in a child: make one file as argv[1] says in argv[2], say "ready", then wait for stdin.
_HOLDER = r"""
import ctypes, mmap, os, sys
how, where = sys.argv[1], sys.argv[2]
if how == "memfd":
    fd = os.memfd_create("held")
elif how == "named":
    fd = os.open(os.path.join(where, "named"), os.O_CREAT | os.O_RDWR, 0o600)
else:
    fd = os.open(where, os.O_TMPFILE | os.O_RDWR, 0o600)
os.write(fd, b"x" * (4 << 20))
os.fsync(fd)
if how == "mapped":
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, *[ctypes.c_int] * 3, ctypes.c_long]
    assert libc.mmap(None, 4096, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0) not in (None, 2**64 - 1)
    os.close(fd)
print("ready", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def hold(tmp_path: Path) -> Iterator[Hold]:
    children: list[subprocess.Popen[str]] = []

    def start(how: str) -> int:
        child = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, how, str(tmp_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        children.append(child)
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        return child.pid

    yield start
    for child in children:
        child.communicate("")


def test_a_file_without_a_name_held_open_counts(hold: Hold) -> None:
    assert unnamed_bytes([hold("o_tmpfile")]) >= 4 * MIB


def test_a_file_held_only_by_a_mapping_counts(hold: Hold) -> None:
    # Measured through map_files by a root host; a host that is not root cannot: infinite.
    assert unnamed_bytes([hold("mapped")]) >= 4 * MIB


def test_named_files_and_shared_memory_are_not_counted_here(hold: Hold) -> None:
    assert unnamed_bytes([hold("named"), hold("memfd"), os.getpid()]) == 0


def test_a_file_seen_twice_counts_once(hold: Hold) -> None:
    one = hold("o_tmpfile")
    held = unnamed_bytes([one, one])
    assert 4 * MIB <= held < 8 * MIB


def test_processes_that_are_gone_hold_nothing() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert unnamed_bytes([child.pid]) == 0


def test_a_root_host_without_cap_sys_ptrace_reads_another_uid_as_that_uid() -> None:
    """As in a container (Docker's default capabilities have no CAP_SYS_PTRACE), a root host
    cannot read a process of another uid by its capabilities; it reads it as its owner."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv (util-linux)")
    place = tempfile.mkdtemp()
    os.chmod(place, 0o777)
    as_other = ["setpriv", "--reuid=12345", "--regid=12345", "--clear-groups"]
    holder = subprocess.Popen(
        [*as_other, "sh", "-c", _SH_HOLDER, "sh", place],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "ready\n"
        measure = "from safeexec.backends.native.disk import unnamed_bytes as held\n"
        measure += f"print(held([{holder.pid}]))"
        without_ptrace = ["setpriv", "--bounding-set=-sys_ptrace", "--inh-caps=-sys_ptrace"]
        done = subprocess.run(
            [*without_ptrace, sys.executable, "-c", measure],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert 4 * MIB <= float(done.stdout) < float("inf"), done.stdout + done.stderr
    finally:
        holder.communicate("")
        os.rmdir(place)


# Opens a file, unlinks it, writes 4 MiB to it, says "ready" and waits (a shell: an
# unprivileged uid can run it whoever installed the interpreter, wherever).
_SH_HOLDER = (
    'exec 3>"$1/held" && rm "$1/held" && head -c 4194304 /dev/zero >&3 && echo ready && read x'
)


def test_a_process_inside_its_exit_holds_nothing_past_it() -> None:
    # /proc refuses a reader the descriptors of a process whose address space is gone (it is
    # exiting); such a process is skipped rather than failing the accounting closed.
    from safeexec.backends.native.disk import _exiting

    child = os.fork()
    if child == 0:
        os._exit(0)
    try:
        os.waitid(os.P_PID, child, os.WEXITED | os.WNOWAIT)  # a zombie now, not reaped yet
        assert _exiting(child)
        assert unnamed_bytes([child]) == 0.0
    finally:
        os.waitpid(child, 0)
    assert _exiting(child)  # gone
    assert not _exiting(os.getpid())
