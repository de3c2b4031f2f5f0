"""The code puts a FIFO where a host tool will open its path, to hang the host.

A host tool that opens a FIFO for reading blocks until a writer comes, and the writer is the
sandbox: it can hold the host's gateway (and with it the session's time limits) forever. A
bound path opens non-blocking and takes regular files only. (On a host without the fix a guard
thread here plays the writer after a while, so the test fails instead of hanging.)
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

from escape_support import Canaries
from tool_support import tool_backend

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.capabilities.gateway import CapabilitySet, tool
from safeexec.model.values import ExecRequest, Limits


def _unblock_later(fifo: Path, done: threading.Event) -> None:
    while not done.wait(5.0):
        with contextlib.suppress(OSError):  # ENXIO while nobody has it open for reading
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def test_a_fifo_at_a_tool_path_does_not_hang_the_host(
    backend: NativeBackend, canaries: Canaries, tmp_path: Path
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    outcomes: list[str] = []

    @tool(root=workdir, effects=["read"])
    def read(path: Path) -> str:
        try:
            return path.read_text()
        except OSError as exc:
            outcomes.append(type(exc).__name__)
            raise

    caps = CapabilitySet()
    caps.grant(read)
    blobs = BlobStore(tmp_path / "blobs")
    done = threading.Event()
    guard = threading.Thread(target=_unblock_later, args=(workdir / "pipe", done), daemon=True)
    guard.start()
    session = tool_backend(backend).open(
        SessionSpec(workdir=workdir, limits=Limits(), blobs=blobs, tools=caps)
    )
    try:
        code = """
import os
os.mkfifo("pipe")
try:
    print("read:", repr(read("pipe")))
except Exception as exc:
    print("refused:", exc)
"""
        result = session.run(ExecRequest(action_id="fifo", code=code, limits=Limits()))
        stdout = blobs.get(result.stdout).decode()
    finally:
        done.set()
        session.close()
    guard.join()
    if backend.name == "native":  # the restricted modes cannot make a FIFO at all
        assert "refused:" in stdout and "regular file" in stdout, stdout
        assert outcomes == ["OSError"]
    assert "read:" not in stdout
    canaries.assert_intact()
