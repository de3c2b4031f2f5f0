"""A session scans its own memory for what earlier sessions handed the shared template.

Every session is forked from one template process, so anything the template ever read (say an
earlier session's ``env`` passthrough, decoded from its spawn request) sits in freed heap pages
that each later session inherits. The host must send a session's config over the session's own
channel, never through the template. The same scan looks for the host's own canary secret,
which must never have reached the template at all.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.model.values import ExecRequest, ExecStatus, Limits

if TYPE_CHECKING:
    from escape_support import Sandbox

NEEDLE = "TEMPLATE-HEAP-"

# Probes each page with write(2) into a pipe (EFAULT on an unmapped page, no crash), then reads
# the mapped ones: the malloc heap below the program break and the mmap region around a fresh
# object (pymalloc arenas). /proc/self/maps is not needed.
SCAN = f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.sbrk.restype = ctypes.c_void_p
r, w = os.pipe()
os.set_blocking(w, False)
needles = ({NEEDLE!r}.encode(), b"canary-")
hits = set()
def scan(low, high):
    address = low & ~4095
    while address < high:
        if libc.write(w, ctypes.c_void_p(address), 4096) > 0:
            os.read(r, 4096)
            page = ctypes.string_at(address, 4096)
            for needle in needles:
                at = page.find(needle)
                while at >= 0:
                    hits.add(page[at:at + 64])
                    at = page.find(needle, at + 1)
        address += 4096
top = libc.sbrk(0)
scan(top - 64 * 1024 * 1024, top)
anchor = id(object())
scan(anchor - 256 * 1024 * 1024, anchor + 256 * 1024 * 1024)
print(len(hits))
print(b"|".join(sorted(hits)).hex())
"""


def _hits(text: str) -> bytes:
    count, found = text.split()
    assert int(count) > 0, "the scanner did not even find its own source in memory"
    return bytes.fromhex(found)


def test_a_session_cannot_read_an_earlier_sessions_env_from_the_template(
    sandbox: Sandbox, backend: NativeBackend, tmp_path: Path
) -> None:
    ran = sandbox.run(SCAN, wall_seconds=60, cpu_seconds=60)  # restricted modes refuse ctypes
    assert ran.result.status is ExecStatus.OK, ran.text
    assert sandbox.canaries.secret.encode() not in _hits(ran.stdout)

    secret = NEEDLE + secrets.token_hex(16)
    blobs = BlobStore(tmp_path / "blobs-victim")
    victim = backend.open(SessionSpec(limits=Limits(), blobs=blobs, env={"API_KEY": secret}))
    try:
        assert victim.run(ExecRequest(action_id="v", code="print(1)")).status is ExecStatus.OK
    finally:
        victim.close()

    # Members of the warm pool forked before the victim's request cannot hold it; open enough
    # sessions that the last ones were forked from the template after it served the victim.
    for number in range(backend.pool_size + 2):
        workdir = tmp_path / f"attacker-{number}"
        workdir.mkdir()
        attacker_blobs = BlobStore(tmp_path / f"blobs-{number}")
        attacker = backend.open(SessionSpec(workdir=workdir, limits=Limits(), blobs=attacker_blobs))
        try:
            result = attacker.run(
                ExecRequest(
                    action_id="scan", code=SCAN, limits=Limits(wall_seconds=60, cpu_seconds=60)
                )
            )
            assert result.status is ExecStatus.OK, result.message
            found = _hits(attacker_blobs.get(result.stdout).decode())
            assert secret.encode() not in found, "another session's env secret was in memory"
            assert sandbox.canaries.secret.encode() not in found, "the host's secret was in memory"
        finally:
            attacker.close()
    sandbox.assert_usable()
