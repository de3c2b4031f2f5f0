"""Disk the workdir scan never sees: ``O_TMPFILE`` files and files unlinked while open.

A budget that walks the workdir counts names; a file without one held 3 GiB against a 1 GiB
budget on the filesystem that also holds the audit log. The session's own workdir is a tmpfs
of ``disk_bytes``, which counts every page whatever its name. Fills are bounded to twice the
suite's small budget, so a sandbox without the mount holds 512 MiB, not the host's disk.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from escape_support import Canaries, Sandbox

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.model.values import ExecStatus, Limits
from safeexec.sandbox.layers import Layer

CHUNK = 8 * 1024 * 1024

FILL = """
import os
held, total = [], 0
try:
    while total < {fill}:
        {open_one}
        os.write(fd, b"x" * {chunk})
        held.append(fd)
        total += {chunk}
except OSError as exc:
    print("refused", exc.errno, flush=True)
print("held", total, flush=True)
"""
O_TMPFILE = "fd = os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o600)"
UNLINKED = "fd = os.open(f'f{total}', os.O_CREAT | os.O_WRONLY, 0o600); os.unlink(f'f{total}')"


@pytest.fixture
def own_workdir(backend: NativeBackend, canaries: Canaries, tmp_path: Path) -> Iterator[Sandbox]:
    """A session with a workdir of its own (the default: no ``workdir`` given)."""
    blobs = BlobStore(tmp_path / "blobs")
    session = backend.open(SessionSpec(limits=Limits(), blobs=blobs))
    try:
        yield Sandbox(session, blobs, canaries, restricted=backend.name == "restricted")
    finally:
        session.close()
        canaries.assert_intact()


@pytest.mark.parametrize("open_one", [O_TMPFILE, UNLINKED], ids=["o_tmpfile", "unlinked"])
def test_unnamed_files_count_against_the_disk_budget(own_workdir: Sandbox, open_one: str) -> None:
    own_workdir.needs(Layer.DISK)
    budget = own_workdir.session._backend.disk_bytes
    code = FILL.format(fill=2 * budget, chunk=CHUNK, open_one=open_one)
    ran = own_workdir.run(code, wall_seconds=60.0, cpu_seconds=30.0)
    assert ran.result.status is ExecStatus.OK, ran.text
    held = int(ran.stdout.split("held")[1].split()[0])
    assert held <= budget, f"held {held >> 20} MiB unnamed against a {budget >> 20} MiB budget"
    assert "refused 28" in ran.stdout  # ENOSPC: the filesystem itself is full
    # Files the session names still work both ways once the unnamed ones are gone.
    own_workdir.session.reset()
    own_workdir.session.upload("in.txt", b"upload")
    ran = own_workdir.run("open('out.txt', 'w').write(open('in.txt').read() + ' ok')")
    assert own_workdir.session.download("out.txt") == b"upload ok"
    assert [a.name for a in ran.result.artifacts] == ["out.txt"]
    own_workdir.assert_usable()
