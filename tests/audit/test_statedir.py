"""The state dir: per-user default, 0700 and owned, never through a link, apart from workdirs."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from safeexec.audit import statedir
from safeexec.audit.statedir import (
    create_file_once,
    default_state_dir,
    ensure_apart,
    open_child_dir,
    open_private_dir,
    read_file,
    replace_file,
)
from safeexec.errors import ConfigurationError


def test_the_default_is_per_user_under_xdg_state_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", "/srv/state")
    assert default_state_dir() == Path("/srv/state/safeexec")
    monkeypatch.setenv("XDG_STATE_HOME", "relative/is/ignored")  # as the XDG spec says
    assert default_state_dir() == Path.home() / ".local" / "state" / "safeexec"
    monkeypatch.delenv("XDG_STATE_HOME")
    assert default_state_dir() == Path.home() / ".local" / "state" / "safeexec"


def test_a_new_state_dir_is_created_0700(tmp_path: Path) -> None:
    os.close(open_private_dir(tmp_path / "a" / "state"))
    assert stat.S_IMODE((tmp_path / "a" / "state").stat().st_mode) == 0o700


def test_an_existing_readable_state_dir_is_tightened_to_0700(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir(mode=0o755)
    (tmp_path / "state").chmod(0o755)
    os.close(open_private_dir(tmp_path / "state"))
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_a_state_dir_writable_by_others_is_refused(tmp_path: Path, mode: int) -> None:
    (tmp_path / "state").mkdir()
    (tmp_path / "state").chmod(mode)
    with pytest.raises(ConfigurationError, match=r"writable by group or others .*chmod 700"):
        open_private_dir(tmp_path / "state")
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == mode  # refused, not "fixed"


def test_a_state_dir_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        other = tmp_path / "theirs"
        other.mkdir(mode=0o700)
        os.chown(other, 65534, 65534)
    else:
        other = Path(sys.base_prefix)  # the interpreter's tree: someone else's, never writable
        if other.stat().st_uid == os.geteuid():
            pytest.fail("the interpreter is owned by the test's uid; run as another user")
    with pytest.raises(ConfigurationError, match=r"is owned by uid \d+, not by this process"):
        open_private_dir(other)


def test_a_state_dir_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(ConfigurationError, match="is a symbolic link"):
        open_private_dir(tmp_path / "link")


def test_children_are_0700_and_never_reached_through_a_link(tmp_path: Path) -> None:
    root = open_private_dir(tmp_path / "state")
    try:
        os.close(open_child_dir(root, "blobs"))
        assert stat.S_IMODE((tmp_path / "state" / "blobs").stat().st_mode) == 0o700
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        (tmp_path / "state" / "planted").symlink_to(tmp_path / "elsewhere")
        with pytest.raises(OSError) as caught:
            open_child_dir(root, "planted")
        assert caught.value.errno in (40, 20)  # ELOOP (or ENOTDIR on some kernels)
        for name in ("..", ".", "a/b", "", "x\0"):
            with pytest.raises(ValueError, match="not a single path component"):
                open_child_dir(root, name)
    finally:
        os.close(root)


def test_files_are_read_only_when_regular_and_never_through_a_link(tmp_path: Path) -> None:
    root = open_private_dir(tmp_path / "state")
    try:
        (tmp_path / "secret").write_bytes(b"host secret")
        (tmp_path / "state" / "link").symlink_to(tmp_path / "secret")
        with pytest.raises(OSError):
            read_file(root, "link", limit=100)
        os.mkfifo(tmp_path / "state" / "fifo")
        with pytest.raises(OSError, match="not a regular file"):
            read_file(root, "fifo", limit=100)  # and it did not block on the FIFO
        (tmp_path / "state" / "big").write_bytes(b"x" * 101)
        with pytest.raises(OSError, match="over 100"):
            read_file(root, "big", limit=100)
    finally:
        os.close(root)


def test_replace_file_replaces_a_planted_link_without_writing_through_it(tmp_path: Path) -> None:
    root = open_private_dir(tmp_path / "state")
    try:
        victim = tmp_path / "victim"
        victim.write_bytes(b"untouched")
        (tmp_path / "state" / "head").symlink_to(victim)
        replace_file(root, "head", b"new", fsync=True)
        assert victim.read_bytes() == b"untouched"
        assert not (tmp_path / "state" / "head").is_symlink()
        assert read_file(root, "head", limit=10) == b"new"
        assert stat.S_IMODE((tmp_path / "state" / "head").stat().st_mode) == 0o600
        assert sorted(os.listdir(tmp_path / "state")) == ["head"]  # no temporary left
    finally:
        os.close(root)


def test_create_file_once_never_overwrites(tmp_path: Path) -> None:
    root = open_private_dir(tmp_path / "state")
    try:
        assert create_file_once(root, "key", b"first", fsync=False) is True
        assert create_file_once(root, "key", b"second", fsync=False) is False
        assert read_file(root, "key", limit=10) == b"first"
        assert sorted(os.listdir(tmp_path / "state")) == ["key"]
    finally:
        os.close(root)


# -- apart from the workdir -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "work"),
    [("w/.safeexec", "w"), ("w", "w"), ("s", "s/work/s-1"), ("w/a/b/c", "w/a"), ("w/../w", "w")],
)
def test_a_state_dir_overlapping_the_workdir_is_refused(
    tmp_path: Path, state: str, work: str
) -> None:
    with pytest.raises(ConfigurationError, match=r"state_dir=.* overlaps workdir=.*--state-dir"):
        ensure_apart(tmp_path / state, tmp_path / work)  # neither exists: by path
    (tmp_path / work).mkdir(parents=True, exist_ok=True)
    (tmp_path / state).mkdir(parents=True, exist_ok=True)
    with pytest.raises(ConfigurationError, match="overlaps"):
        ensure_apart(tmp_path / state, tmp_path / work)  # both exist: by path and by inode


def test_siblings_and_prefix_lookalikes_are_apart(tmp_path: Path) -> None:
    for state, work in [("state", "work"), ("work-state", "work"), ("w", "w2")]:
        (tmp_path / state).mkdir(exist_ok=True)
        (tmp_path / work).mkdir(exist_ok=True)
        ensure_apart(tmp_path / state, tmp_path / work)


def test_an_overlap_through_a_symlinked_workdir_is_refused(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    (tmp_path / "work-link").symlink_to(tmp_path / "state" / "inner", target_is_directory=True)
    (tmp_path / "state" / "inner").mkdir()
    with pytest.raises(ConfigurationError, match="overlaps"):
        ensure_apart(tmp_path / "state", tmp_path / "work-link")


_BIND_CHECK = """
import sys
from pathlib import Path
from safeexec.audit import statedir
from safeexec.errors import ConfigurationError
if sys.argv[1] == "without-inode-walk":
    statedir._inode_chain = lambda path: []  # the old, path-only behaviour
try:
    statedir.ensure_apart(Path(sys.argv[2]) / ".safeexec", Path(sys.argv[3]))
except ConfigurationError:
    print("refused")
else:
    print("accepted")
"""


def _in_a_mount_namespace_with_a_bind(tmp_path: Path, variant: str) -> str:
    """Bind ``work`` at ``view`` in a private mount namespace and ask about ``view/.safeexec``."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.fail("unshare (util-linux) is needed for the bind-mount case")
    work, view = tmp_path / "work", tmp_path / "view"
    (work / ".safeexec").mkdir(parents=True)
    view.mkdir()
    userns = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    script = (
        f"mount --bind '{work}' '{view}' && exec '{sys.executable}' -c '{_BIND_CHECK}' "
        f"'{variant}' '{view}' '{work}'"
    )
    done = subprocess.run(
        [unshare, *userns, "--mount", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_an_overlap_through_a_bind_mount_is_refused_by_the_inode_walk(tmp_path: Path) -> None:
    # view/.safeexec resolves to a path outside work, yet it is work/.safeexec: the same inode.
    assert _in_a_mount_namespace_with_a_bind(tmp_path, "with-inode-walk") == "refused"


def test_without_the_inode_walk_the_bind_mount_overlap_would_pass(tmp_path: Path) -> None:
    # The mechanism can fail: with only the path comparison, the bind mount hides the overlap.
    assert _in_a_mount_namespace_with_a_bind(tmp_path, "without-inode-walk") == "accepted"


def test_the_inode_chain_reaches_the_root(tmp_path: Path) -> None:
    chain = statedir._inode_chain(tmp_path)
    root = os.stat("/")
    assert chain[0] == (tmp_path.stat().st_dev, tmp_path.stat().st_ino)
    assert chain[-1] == (root.st_dev, root.st_ino)
    assert len(chain) == len(tmp_path.resolve().parts)
    assert statedir._inode_chain(tmp_path / "absent") == []
