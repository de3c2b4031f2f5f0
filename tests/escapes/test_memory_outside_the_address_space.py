"""Memory the address-space rlimit never sees: memfd pages filled with ``fallocate``, System V
shared memory touched and detached.

``RLIMIT_AS`` counts mappings; a memfd that is only ``fallocate``d is never mapped, and a System V
segment keeps its pages after ``shmdt``, so a session could hold many times its memory limit in
host RAM (as ``nobody``, measured: 4 GiB against 1 GiB). Where the session has a memory cgroup,
it charges those pages like any other; where it has none, seccomp refuses ``memfd_create``,
``shmget``, ``msgget`` and ``semget`` (ENOSYS). Each fill is bounded to four times a small limit,
so on a sandbox with neither it holds 512 MiB, not the host.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from escape_support import Canaries, Ran, Sandbox

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.model.values import ExecStatus, Limits

LIMIT = 128 * 1024 * 1024
CHUNK = 16 * 1024 * 1024
FILL = 4 * LIMIT

MEMFD_FILL = f"""
import os
held = []
try:
    while len(held) * {CHUNK} < {FILL}:
        fd = os.memfd_create("fill")
        os.posix_fallocate(fd, 0, {CHUNK})
        held.append(fd)
        print(len(held) * {CHUNK}, flush=True)
except OSError as exc:
    print("refused", exc.errno, flush=True)
"""

SYSV_FILL = f"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
held = 0
try:
    while held < {FILL}:
        segment = libc.shmget(0, {CHUNK}, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
        if segment < 0:
            raise OSError(ctypes.get_errno(), "shmget")
        address = libc.shmat(segment, None, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "shmat")
        ctypes.memset(address, 1, {CHUNK})
        libc.shmdt(address)  # unmapped, and RLIMIT_AS forgets it; the segment keeps its pages
        held += {CHUNK}
        print(held, flush=True)
except OSError as exc:
    print("refused", exc.errno, flush=True)
"""

# Shared anonymous memory is charged to RLIMIT_AS while mapped; it could outlive its mapping only
# through a descriptor, which /proc/self/map_files would give (it needs CAP_SYS_ADMIN).
SHARED_ANONYMOUS_FILL = f"""
import mmap, os
held = []
try:
    while len(held) * {CHUNK} < {FILL}:
        shared = mmap.mmap(-1, {CHUNK}, flags=mmap.MAP_SHARED)
        shared.write(b"x" * {CHUNK})
        start = [line.split("-")[0] for line in open("/proc/self/maps") if "/dev/zero" in line][-1]
        spans = [n for n in os.listdir("/proc/self/map_files") if n.startswith(start + "-")]
        held.append(os.open("/proc/self/map_files/" + spans[0], os.O_RDONLY))
        shared.close()
        print(len(held) * {CHUNK}, flush=True)
except OSError as exc:
    print("refused", exc.errno, flush=True)
"""


@pytest.fixture
def small(backend: NativeBackend, canaries: Canaries, tmp_path: Path) -> Iterator[Sandbox]:
    blobs = BlobStore(tmp_path / "blobs")
    workdir = tmp_path / "work"
    workdir.mkdir()
    session = backend.open(
        SessionSpec(workdir=workdir, limits=Limits(memory_bytes=LIMIT), blobs=blobs)
    )
    try:
        yield Sandbox(session, blobs, canaries, restricted=backend.name == "restricted")
    finally:
        session.close()
        canaries.assert_intact()


def assert_counted_or_refused(ran: Ran, what: str) -> None:
    """Held less than the limit, and stopped: by the memory cgroup (the session killed for its
    memory limit) or by seccomp (refused with ENOSYS)."""
    held = max((int(line) for line in ran.stdout.split() if line.isdigit()), default=0)
    assert held < LIMIT, f"held {held >> 20} MiB in {what} against a {LIMIT >> 20} MiB limit"
    if ran.result.status is ExecStatus.OK:
        assert "refused 38" in ran.stdout, ran.text
        print(f"{what}: stopped by seccomp")  # read by test_resource_cells_as_nobody
    else:
        assert ran.result.status is ExecStatus.LIMIT_EXCEEDED, ran.text
        assert any(e.kind == "limit_hit" and e.limit == "memory_bytes" for e in ran.result.events)
        print(f"{what}: stopped by the memory cgroup")


def test_memfd_pages_count_against_the_memory_limit(small: Sandbox) -> None:
    ran = small.run(MEMFD_FILL, wall_seconds=30.0)
    assert_counted_or_refused(ran, "memfds")
    small.assert_usable()


def test_system_v_shared_memory_counts_against_the_memory_limit(small: Sandbox) -> None:
    ran = small.run(SYSV_FILL, wall_seconds=30.0)
    assert_counted_or_refused(ran, "System V segments")
    small.assert_usable()


def test_memfd_pages_held_between_calls_count_too(small: Sandbox) -> None:
    """Half the limit in one call, then as much again in the next (the first call's descriptors
    stay open): the second cannot finish."""
    half = MEMFD_FILL.replace(f"< {FILL}", f"< {LIMIT // 2}")
    first = small.run(half)
    assert first.result.status is ExecStatus.OK, first.text
    second = small.run(half + "\nprint('done', flush=True)")
    assert "done" not in second.stdout or "refused" in second.stdout, second.text
    small.assert_usable()


def test_shared_anonymous_memory_cannot_outlive_its_mapping(small: Sandbox) -> None:
    ran = small.run(SHARED_ANONYMOUS_FILL, wall_seconds=30.0)
    assert ran.result.status is ExecStatus.OK, ran.text
    assert "refused" in ran.stdout, ran.text  # EPERM: no descriptor for the pages
    assert not any(word.isdigit() for word in ran.stdout.split()[:-2]), ran.text
    small.assert_usable()
