"""Disk the workdir scan never sees: ``O_TMPFILE`` files and files unlinked while open.

A budget that walks the workdir counts names; a file without one held 3 GiB against a 1 GiB
budget on the filesystem that also holds the audit log. Where the host can mount one, the
session's own workdir is a tmpfs of ``disk_bytes``, which counts every page whatever its name
(ENOSPC). Everywhere else (a workdir the caller gives, a host that is not root) the host counts
the files without a name that the session's processes hold, through descriptors or mappings,
and kills the session past the budget; seccomp refuses what could hold one out of its sight
(descriptors in flight in a unix socket). Every fill is bounded to four times a 64 MiB budget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from escape_support import Canaries, Ran, Sandbox

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.backends.restricted import RestrictedBackend
from safeexec.egress import NetworkPolicy
from safeexec.model.values import ExecStatus, Limits

BUDGET = 64 * 1024 * 1024
CHUNK = 8 * 1024 * 1024
FILL = 4 * BUDGET

SMALL_DISK: dict[str, Callable[[], NativeBackend]] = {
    "native": lambda: NativeBackend(disk_bytes=BUDGET, pool_size=1),
    "restricted": lambda: RestrictedBackend(  # type: ignore[return-value]
        native=NativeBackend(executor="restricted", disk_bytes=BUDGET, pool_size=1)
    ),
}

# Each opened file holds one CHUNK without a name; the running total is printed as it grows.
TEMPLATE = """
import os
held, total = [], 0
try:
    while total < {fill}:
{open_one}
        total += {chunk}
        print(total, flush=True)
except OSError as exc:
    print("refused", exc.errno, flush=True)
"""
O_TMPFILE = """
        fd = os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o600)
        os.write(fd, b"x" * {chunk})
        held.append(fd)
"""
UNLINKED = """
        fd = os.open(f'f{{total}}', os.O_CREAT | os.O_WRONLY, 0o600)
        os.unlink(f'f{{total}}')
        os.write(fd, b"x" * {chunk})
        held.append(fd)
"""
# Allocated without writing (where fallocate is refused, glibc writes the blocks instead).
PREALLOCATED = """
        fd = os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o600)
        os.posix_fallocate(fd, 0, {chunk})
        held.append(fd)
"""
# Held by a one-page mapping only: the descriptor is closed, the file never had a link
# (through libc: Python's mmap keeps a duplicate of the descriptor).
MAPPED = """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, *[ctypes.c_int] * 3, ctypes.c_long]
        fd = os.open('.', os.O_TMPFILE | os.O_RDWR, 0o600)
        os.write(fd, b"x" * {chunk})
        held.append(libc.mmap(None, 4096, 1, 1, fd, 0))  # PROT_READ, MAP_SHARED
        os.close(fd)
"""
# Held in flight: sent over a unix socket pair that nobody reads, then closed.
IN_FLIGHT = """
        import array, socket
        if not held:
            held.extend(socket.socketpair())
        fd = os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o600)
        os.write(fd, b"x" * {chunk})
        rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]).tobytes())]
        held[0].sendmsg([b"x"], rights)
        os.close(fd)
"""
HOLDERS = {
    "o_tmpfile": O_TMPFILE,
    "unlinked": UNLINKED,
    "preallocated": PREALLOCATED,
    "mapped": MAPPED,
    "in_flight": IN_FLIGHT,
}


def fill_code(holder: str, fill: int = FILL) -> str:
    return TEMPLATE.format(fill=fill, chunk=CHUNK, open_one=HOLDERS[holder].format(chunk=CHUNK))


@pytest.fixture(scope="module", params=list(SMALL_DISK))
def small_disk(request: pytest.FixtureRequest, canaries: Canaries) -> Iterator[NativeBackend]:
    """Native and restricted backends whose sessions have a 64 MiB disk budget (started after
    the canaries, so the secret is in the environment the template inherits)."""
    assert canaries.secret
    instance = SMALL_DISK[request.param]()
    instance.start()
    yield instance
    instance.close()


@pytest.fixture(
    params=["own", "caller", "caller_network"],
    ids=["own_workdir", "caller_workdir", "caller_workdir_network"],
)
def session(
    request: pytest.FixtureRequest, small_disk: NativeBackend, canaries: Canaries, tmp_path: Path
) -> Iterator[Sandbox]:
    """A session with a workdir of its own (a tmpfs, where the host can mount one), or in a
    directory the caller gives (used in place: the budget is counted), also with the network
    on (an egress channel, which must not give back a way to put a descriptor in flight)."""
    blobs = BlobStore(tmp_path / "blobs")
    workdir = None
    if request.param.startswith("caller"):
        workdir = tmp_path / "work"
        workdir.mkdir()
    network = NetworkPolicy(allow=("index.test",) if request.param.endswith("network") else ())
    spec = SessionSpec(workdir=workdir, limits=Limits(), blobs=blobs, network=network)
    opened = small_disk.open(spec)
    try:
        yield Sandbox(opened, blobs, canaries, restricted=small_disk.name == "restricted")
    finally:
        opened.close()
        canaries.assert_intact()


def held_bytes(ran: Ran) -> int:
    return max((int(word) for word in ran.stdout.split() if word.isdigit()), default=0)


def assert_stopped(ran: Ran) -> None:
    """Stopped at the budget: refused by the filesystem (ENOSPC) or by seccomp (ENOSYS) with at
    most the budget held, or the session killed for its disk budget (which frees the files)."""
    if ran.result.status is ExecStatus.LIMIT_EXCEEDED:
        assert "disk budget" in ran.result.message, ran.text
        assert any(e.kind == "limit_hit" and e.limit == "disk_bytes" for e in ran.result.events)
        print("unnamed files: stopped by the counted disk budget")  # for the run as nobody
        return
    assert ran.result.status is ExecStatus.OK, ran.text
    held = held_bytes(ran)
    assert held <= BUDGET, f"held {held >> 20} MiB without names against {BUDGET >> 20} MiB"
    assert "refused 28" in ran.stdout or "refused 38" in ran.stdout, ran.text
    by = "the workdir's tmpfs" if "refused 28" in ran.stdout else "seccomp"
    print(f"unnamed files: stopped by {by}")


@pytest.mark.parametrize("holder", list(HOLDERS))
def test_unnamed_files_count_against_the_disk_budget(session: Sandbox, holder: str) -> None:
    ran = session.run(fill_code(holder), wall_seconds=60.0, cpu_seconds=30.0)
    assert_stopped(ran)
    # Files the session names still work both ways once the unnamed ones are gone.
    session.session.reset()
    session.session.upload("in.txt", b"upload")
    ran = session.run("open('out.txt', 'w').write(open('in.txt').read() + ' ok')")
    assert session.session.download("out.txt") == b"upload ok"
    assert [a.name for a in ran.result.artifacts] == ["out.txt"]
    session.assert_usable()


@pytest.mark.parametrize("holder", ["o_tmpfile", "unlinked"])
def test_unnamed_files_held_between_calls_count_too(session: Sandbox, holder: str) -> None:
    """Three quarters of the budget per call, the descriptors kept open between calls (each
    call quicker than the host's poll): the second call cannot end holding more than the
    budget."""
    three_quarters = fill_code(holder, fill=BUDGET * 3 // 4)
    first = session.run(three_quarters)
    assert first.result.status is ExecStatus.OK, first.text
    second = session.run(three_quarters.replace("held, total = [], 0", "total = 0"))
    assert_stopped(second)
    session.assert_usable()
