"""The host's ``upload``/``download`` aimed outside the workdir by names or by what the code left.

Code can leave symlinks (to a host file, to a host directory), FIFOs (a read would block the
host) and hard links in its workdir, and a model can suggest names with ``..``, absolute paths
or NUL. Every such transfer must fail (``ConfigurationError``; ``OSError`` for an upload that
meets a link or FIFO on the way) and touch nothing outside.
The links are made here, as the code would have made them, so every mode's session sees them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from safeexec.errors import ConfigurationError

if TYPE_CHECKING:
    from escape_support import Sandbox

BAD_NAMES = ["../escape.txt", "/etc/passwd", "a/../../b", "nul\0byte", "ok.txt\0/../../x", ""]


def _transfers(sandbox: Sandbox) -> tuple[Path, object]:
    session = sandbox.session
    return Path(session.workdir), session


@pytest.mark.parametrize("name", BAD_NAMES)
def test_names_outside_the_workdir_are_refused(sandbox: Sandbox, name: str) -> None:
    _workdir, session = _transfers(sandbox)
    with pytest.raises(ConfigurationError):
        session.upload(name, b"x")  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError):
        session.download(name)  # type: ignore[attr-defined]
    sandbox.assert_usable()


def test_links_and_fifos_left_in_the_workdir_are_never_followed(sandbox: Sandbox) -> None:
    workdir, session = _transfers(sandbox)
    secret_file = sandbox.canaries.secret_file
    (workdir / "file-link").symlink_to(secret_file)
    (workdir / "dir-link").symlink_to(secret_file.parent)
    os.mkfifo(workdir / "pipe")
    (workdir / "plain.txt").write_text("plain")
    os.link(workdir / "plain.txt", workdir / "hard-link")
    for name in ("file-link", "dir-link/secret.txt", "pipe", "hard-link"):
        with pytest.raises(ConfigurationError):
            session.download(name)  # type: ignore[attr-defined]
    for name in ("file-link", "dir-link/secret.txt", "dir-link/new.txt", "pipe", "hard-link"):
        with pytest.raises((ConfigurationError, OSError)):
            session.upload(name, b"overwritten")  # type: ignore[attr-defined]
    assert not (secret_file.parent / "new.txt").exists()
    assert (workdir / "plain.txt").read_text() == "plain"
    sandbox.assert_usable()
