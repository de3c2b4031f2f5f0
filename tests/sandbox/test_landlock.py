"""Landlock's workdir rule: files and directories may be made there, symlinks only if asked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from safeexec.sandbox import landlock

pytestmark = pytest.mark.skipif(landlock.abi_version() < 1, reason="kernel without Landlock")

# Landlock cannot be undone, so each case confines a child interpreter of its own.
_CHILD = """
import os, sys
from safeexec.sandbox import landlock
landlock.restrict(read_only=(), read_write=(sys.argv[1],), make_symlinks=sys.argv[2] == "yes")
os.chdir(sys.argv[1])
with open("file.txt", "w") as f:
    f.write("x")
os.mkdir("dir")
try:
    os.symlink("/etc/passwd", "link")
    print("symlink-made")
except PermissionError:
    print("symlink-refused")
"""


def _confined(workdir: Path, make_symlinks: bool) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(workdir), "yes" if make_symlinks else "no"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def test_workdir_rule_withholds_making_symlinks_by_default(tmp_path: Path) -> None:
    assert _confined(tmp_path, make_symlinks=False) == "symlink-refused"
    assert (tmp_path / "file.txt").read_text() == "x" and (tmp_path / "dir").is_dir()
    assert not (tmp_path / "link").is_symlink()


def test_workdir_rule_grants_symlinks_when_asked(tmp_path: Path) -> None:
    assert _confined(tmp_path, make_symlinks=True) == "symlink-made"
    assert (tmp_path / "link").is_symlink()


_STAGED = """
import os, sys
from safeexec.sandbox import landlock
rules = landlock.ruleset(lowest_fd=40)
assert rules.fd >= 40, rules.fd
fd = rules.fd
rules.allow(read_only=(os.path.dirname(os.__file__),))
rules.allow(read_write=(sys.argv[1],), make_symlinks=sys.argv[2] == "yes")
rules.enforce()
try:
    os.fstat(fd)
    print("ruleset-open")
except OSError:
    print("ruleset-closed")
os.chdir(sys.argv[1])
os.mkdir("dir")
try:
    os.symlink("/etc/passwd", "link")
    print("symlink-made")
except PermissionError:
    print("symlink-refused")
try:
    os.listdir(os.path.dirname(sys.argv[1]))
    print("parent-listed")
except PermissionError:
    print("parent-refused")
"""


@pytest.mark.parametrize("make_symlinks", [False, True])
def test_a_ruleset_built_in_steps_confines_like_one_built_at_once(
    tmp_path: Path, make_symlinks: bool
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _STAGED, str(workdir), "yes" if make_symlinks else "no"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    symlink = "symlink-made" if make_symlinks else "symlink-refused"
    assert done.stdout.split() == ["ruleset-closed", symlink, "parent-refused"]
    assert (workdir / "dir").is_dir()
