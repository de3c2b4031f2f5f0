"""A cell nests directories thousands deep so the host's clean-up recurses itself to death.

The disk watch kills a worker whose tree is too deep to measure, but the tree stays; closing
the session then removed it with ``shutil.rmtree``, one Python frame per level:
``RecursionError`` out of ``close()`` and a workdir left behind. How deep a cell gets before the
watch looks depends on the machine's speed, so the tree is dug here, as deep as a fast machine
lets a cell dig; removal, and the workdir scans every backend shares, must work at any depth.
"""

from __future__ import annotations

import os
from pathlib import Path

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.backends.workdir import remove_tree
from safeexec.model.values import ExecRequest, ExecStatus, Limits

DEPTH = 3000


def _dig(workdir: Path, depth: int, outside: Path) -> None:
    fd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = child
        with open(os.open("bottom.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
            f.write("the bottom")
        os.symlink(outside, "outside", dir_fd=fd)  # removal must unlink it, not follow it
    finally:
        os.close(fd)


def test_closing_a_session_removes_a_workdir_nested_thousands_deep(
    backend: NativeBackend, tmp_path: Path
) -> None:
    session = backend.open(SessionSpec(limits=Limits(), blobs=BlobStore(tmp_path / "blobs")))
    workdir = Path(session.workdir)  # made by the session, so removed by its close
    native = type(session).__name__ == "NativeSession"
    try:
        keep = tmp_path / "keep"
        keep.mkdir()
        (keep / "precious.txt").write_text("keep me")
        _dig(workdir, DEPTH, keep)
        result = session.run(ExecRequest(action_id="after", code="print(6 * 7)", limits=Limits()))
        assert result.status in (ExecStatus.OK, ExecStatus.LIMIT_EXCEEDED), result.message
    finally:
        session.close()
        if not native:  # the in-process mode leaves its workdir to the caller
            remove_tree(str(workdir))
    assert not workdir.exists(), "the nested workdir was left behind"
    assert (keep / "precious.txt").read_text() == "keep me"
