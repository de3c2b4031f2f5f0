"""Memory the address-space rlimit never sees: memfd pages filled with ``fallocate``, unmapped.

``RLIMIT_AS`` counts mappings; a memfd that is only ``fallocate``d is never mapped, so a session
could hold many times its memory limit in host RAM (256 fds x 64 MiB per process, between
calls). The session's memory cgroup charges those pages like any other. The fill here is bounded
to four times a small limit, so on a sandbox without the cgroup it holds 512 MiB, not the host.
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


def test_memfd_pages_count_against_the_memory_limit(small: Sandbox) -> None:
    small.needs(Layer.CGROUP_MEMORY)
    ran = small.run(MEMFD_FILL, wall_seconds=30.0)
    held = max((int(line) for line in ran.stdout.split() if line.isdigit()), default=0)
    assert held < LIMIT, f"held {held >> 20} MiB in memfds against a {LIMIT >> 20} MiB limit"
    if ran.result.status is not ExecStatus.OK:
        assert ran.result.status is ExecStatus.LIMIT_EXCEEDED, ran.text
        assert any(e.kind == "limit_hit" and e.limit == "memory_bytes" for e in ran.result.events)
    small.assert_usable()


def test_memfd_pages_held_between_calls_count_too(small: Sandbox) -> None:
    """Half the limit in one call, then as much again in the next (the first call's descriptors
    stay open): the second cannot finish."""
    small.needs(Layer.CGROUP_MEMORY)
    half = MEMFD_FILL.replace(f"< {FILL}", f"< {LIMIT // 2}")
    first = small.run(half)
    assert first.result.status is ExecStatus.OK, first.text
    second = small.run(half + "\nprint('done', flush=True)")
    assert "done" not in second.stdout or "refused" in second.stdout, second.text
    small.assert_usable()
