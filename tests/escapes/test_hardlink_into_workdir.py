"""A workdir holding a hard link to a host file must not hand that file to the sandbox.

When the host runs as root, each session gets a uid of its own and the host chowns the workdir
tree to it. A hard link (say from a ``cp -al`` snapshot) is the same inode as a file outside the
workdir: chowning it would let the sandbox rewrite the host's file through the link.

Known miss, recorded as a strict xfail: code that runs as the host's own uid (the in-process
restricted mode, or a native session of a host that is not root) can write any workdir file the
host can, links included; only a uid of the session's own separates them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_a_hard_link_to_a_host_file_is_not_given_to_the_session(
    sandbox: Sandbox, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if type(sandbox.session).__name__ == "InProcessChildSession" or os.geteuid() != 0:
        request.applymarker(
            pytest.mark.xfail(strict=True, reason="the code runs as the host's own uid")
        )
    outside = tmp_path / "host-owned.txt"
    outside.write_text("host data")
    outside.chmod(0o644)
    before = outside.stat()
    os.link(outside, Path(sandbox.session.workdir) / "linked.txt")
    sandbox.session.reset()  # a fresh worker: the host hands the workdir to it again
    ran = sandbox.run(
        """
try:
    with open('linked.txt', 'w') as handle:
        handle.write('overwritten by the sandbox')
    print('wrote')
except OSError as exc:
    print(type(exc).__name__)
"""
    )
    assert outside.read_text() == "host data"
    after = outside.stat()
    assert (after.st_uid, after.st_gid, after.st_mode) == (
        before.st_uid,
        before.st_gid,
        before.st_mode,
    )
    assert "wrote" not in ran.stdout, ran.text
    sandbox.assert_usable()
