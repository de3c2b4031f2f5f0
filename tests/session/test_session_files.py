"""Session.files: write, read, list and remove beneath the workdir, never through a link."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from safeexec.backends.fake import FakeBackend, not_executed
from safeexec.errors import ConfigurationError
from safeexec.model.values import ExecStatus, Limits
from safeexec.policy.schema import BackendsConfig, Policy, PolicyInfo
from safeexec.session.files import DirEntry
from safeexec.session.session import Session

POLICY = Policy(
    info=PolicyInfo(id="unit"),
    backends=BackendsConfig(allowed=("fake",), default="fake"),
    limits=Limits(file_size_bytes=1024),
    digest="9" * 64,
)


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    backends = {"fake": FakeBackend(not_executed)}
    with Session(policy=POLICY, backends=backends, state_dir=tmp_path / "state") as opened:
        yield opened


def test_written_files_read_back_and_are_listed(session: Session) -> None:
    session.files.write("data/input.csv", "a,b\n1,2\n")
    session.files.write("raw.bin", b"\x00\xff")
    assert session.files.read("data/input.csv") == b"a,b\n1,2\n"
    assert session.files.list() == (
        DirEntry(name="data", kind="dir", size=session.files.list()[0].size),
        DirEntry(name="raw.bin", kind="file", size=2),
    )
    assert session.files.list("data") == (DirEntry(name="input.csv", kind="file", size=8),)


def test_files_written_after_the_sandbox_started_go_through_it(session: Session) -> None:
    session.run("```python\nprint(1)\n```")
    session.files.write("late.txt", "x")
    assert (session.workdir / "late.txt").read_text() == "x"


def test_remove_takes_files_and_whole_directories(session: Session) -> None:
    session.files.write("out/deep/er/r.txt", "r")
    session.files.write("keep.txt", "k")
    session.files.remove("out")
    session.files.remove("keep.txt")
    assert session.files.list() == ()


def test_remove_takes_a_link_never_its_target(session: Session, tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    session.files.write("x.txt", "x")
    os.symlink(target, session.workdir / "link")
    os.symlink(tmp_path, session.workdir / "dirlink")
    assert {e.name: e.kind for e in session.files.list()}["link"] == "symlink"
    session.files.remove("link")
    session.files.remove("dirlink")
    assert target.read_text() == "keep me"
    assert [e.name for e in session.files.list()] == ["x.txt"]


@pytest.mark.parametrize("name", ["../escape", "/etc/passwd", "", "a/../../b", "a\0b"])
def test_names_outside_the_workdir_are_refused(session: Session, name: str) -> None:
    with pytest.raises(ConfigurationError, match="name="):
        session.files.write(name, "x")
    with pytest.raises(ConfigurationError, match="name="):
        session.files.read(name)
    with pytest.raises(ConfigurationError, match="name="):
        session.files.remove(name)


def test_reads_follow_no_link_and_respect_the_file_size_limit(
    session: Session, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    session.files.write("big.bin", b"x" * 2048)
    os.symlink(outside, session.workdir / "link.txt")
    for name in ("big.bin", "link.txt", "missing.txt"):
        with pytest.raises(ConfigurationError, match="not a regular file of at most 1024 bytes"):
            session.files.read(name)


def test_listing_through_a_link_or_a_file_is_refused(session: Session, tmp_path: Path) -> None:
    session.files.write("f.txt", "x")
    os.symlink(tmp_path, session.workdir / "dirlink")
    for name in ("f.txt", "dirlink", "nope"):
        with pytest.raises(ConfigurationError, match="is not a directory in the workdir"):
            session.files.list(name)


def test_removing_something_absent_is_a_configuration_error(session: Session) -> None:
    session.files.write("a.txt", "a")
    with pytest.raises(ConfigurationError, match="is not in the workdir"):
        session.files.remove("b.txt")


def test_data_must_be_bytes_or_text(session: Session) -> None:
    with pytest.raises(ConfigurationError, match="data must be bytes or str"):
        session.files.write("a.txt", 42)  # type: ignore[arg-type]


def test_the_native_sandbox_can_append_to_a_file_the_host_wrote(tmp_path: Path) -> None:
    with Session(policy="default", state_dir=tmp_path / "state") as native:
        native.run("```python\nprint('started')\n```")
        native.files.write("log.txt", "host\n")
        append = "with open('log.txt', 'a') as f:\n    f.write('sandbox\\n')\n"
        ran = native.run(f"```python\n{append}```")
        assert ran.result is not None and ran.result.status is ExecStatus.OK
        assert native.files.read("log.txt") == b"host\nsandbox\n"


def test_a_workdir_that_names_a_file_is_a_configuration_error(tmp_path: Path) -> None:
    afile = tmp_path / "notes.txt"
    afile.write_text("x")
    with pytest.raises(ConfigurationError, match="is not a directory"):
        Session(policy=POLICY, workdir=afile, state_dir=tmp_path / "state")
