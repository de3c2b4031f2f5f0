"""A root host lends a user's workdir to the session's uid and gives every entry back on close."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.model.values import ExecRequest, ExecStatus, Limits

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only a root host lends its workdir")

USER, OTHER = 4321, 4322  # uids of nobody on this machine: the owners a user's tree has


def _owner(path: Path) -> tuple[int, int]:
    info = path.lstat()
    return info.st_uid, info.st_gid


def _users_tree(root: Path) -> Path:
    work = root / "project"
    (work / "src").mkdir(parents=True)
    (work / "notes.txt").write_text("mine\n")
    (work / "src" / "theirs.py").write_text("x = 1\n")
    for path, uid in ((work, USER), (work / "notes.txt", USER), (work / "src", OTHER)):
        os.chown(path, uid, uid)
    os.chown(work / "src" / "theirs.py", OTHER, USER + 100)
    return work


def test_a_users_directory_keeps_its_owners_after_the_session(tmp_path: Path) -> None:
    work = _users_tree(tmp_path)
    before = {path: _owner(path) for path in (work, *work.rglob("*"))}
    backend = NativeBackend()
    try:
        session = backend.open(SessionSpec(workdir=work, blobs=BlobStore(tmp_path / "blobs")))
        code = (
            "open('notes.txt', 'a').write('appended by the session\\n')\n"
            "open('made.txt', 'w').write('new')\n"
            "import os\nos.makedirs('out/deeper')\nopen('out/deeper/r.txt', 'w').write('r')\n"
        )
        session.upload("uploaded.csv", b"a,b\n")
        result = session.run(ExecRequest(action_id="a", code=code, limits=Limits()))
        assert result.status is ExecStatus.OK, session.blobs.get(result.stderr)
        session.reset()  # a new worker, a new uid: the tree is lent again, recorded once
        append = "open('uploaded.csv', 'a').write('1,2\\n')"
        again = session.run(ExecRequest(action_id="b", code=append, limits=Limits()))
        assert again.status is ExecStatus.OK, session.blobs.get(again.stderr)
        session.close()
    finally:
        backend.close()
    assert {path: _owner(path) for path in before} == before
    assert (work / "notes.txt").read_text() == "mine\nappended by the session\n"
    # What the session and the host added belongs to the workdir's owner now.
    for made in ("made.txt", "out", "out/deeper", "out/deeper/r.txt", "uploaded.csv"):
        assert _owner(work / made) == (USER, USER), made
    assert (work / "uploaded.csv").read_text() == "a,b\n1,2\n"


def test_a_file_owned_by_someone_outside_the_session_is_never_handed_over(tmp_path: Path) -> None:
    work = _users_tree(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    os.chown(outside, OTHER, OTHER)
    os.link(outside, work / "hardlink.txt")  # the same inode, reachable from outside the workdir
    backend = NativeBackend()
    try:
        spec = SessionSpec(workdir=work, blobs=BlobStore(tmp_path / "blobs"))
        with backend.open(spec) as session:
            assert _owner(outside) == (OTHER, OTHER)
            assert session.pid is not None
    finally:
        backend.close()
    assert _owner(outside) == (OTHER, OTHER)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_a_users_directory_keeps_its_modes_and_what_the_session_made_is_not_left_open(
    tmp_path: Path,
) -> None:
    work = _users_tree(tmp_path)
    os.chmod(work, 0o750)
    os.chmod(work / "notes.txt", 0o600)
    before = {path: _mode(path) for path in (work, *work.rglob("*"))}
    backend = NativeBackend()
    try:
        spec = SessionSpec(workdir=work, blobs=BlobStore(tmp_path / "blobs"))
        with backend.open(spec) as session:
            code = (
                "import os\nos.chmod('.', 0o777)\nos.chmod('notes.txt', 0o666)\n"
                "os.chmod('src', 0o3777)\nos.mkdir('drop')\nos.chmod('drop', 0o3777)\n"
                "open('run.sh', 'w').write('#!/bin/sh\\n')\nos.chmod('run.sh', 0o6777)\n"
                "open('plain.txt', 'w').write('x')\nos.chmod('plain.txt', 0o644)\n"
            )
            result = session.run(ExecRequest(action_id="a", code=code, limits=Limits()))
            assert result.status is ExecStatus.OK, session.blobs.get(result.stderr)
    finally:
        backend.close()
    assert {path: _mode(path) for path in before} == before
    assert _mode(work / "drop") == 0o755
    assert _mode(work / "run.sh") == 0o755
    assert _mode(work / "plain.txt") == 0o644
