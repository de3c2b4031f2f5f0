"""Artifacts flipped between files and links to host files while the host collects them.

Landlock now withholds making symlinks in the workdir, so in native mode the cell's own flipper
(``test_artifact_swap_race``) can no longer plant links. The collector must not depend on that
layer: here a process outside the sandbox exchanges ``race.txt`` with a link to the host's secret
and ``race-dir`` with a link to the secret's directory (``renameat2(RENAME_EXCHANGE)``, atomic,
a bounded number of times) while steps run and their artifacts are collected.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox

_FLIPPER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
os.chdir(sys.argv[1])
AT_FDCWD, RENAME_EXCHANGE = -100, 2
print("ready", flush=True)
for i in range(int(sys.argv[2])):
    for a, b in ((b"race.txt", b"race.lnk"), (b"race-dir", b"race-dir.lnk")):
        libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
"""


def test_links_swapped_in_by_the_host_side_are_never_collected(sandbox: Sandbox) -> None:
    secret = sandbox.canaries.secret_file
    workdir = Path(sandbox.session.workdir)
    (workdir / "race.txt").write_text("harmless")
    (workdir / "race.lnk").symlink_to(secret)
    (workdir / "race-dir").mkdir()
    (workdir / "race-dir" / secret.name).write_text("harmless")
    (workdir / "race-dir.lnk").symlink_to(secret.parent)
    flipper = subprocess.Popen(
        [sys.executable, "-c", _FLIPPER, str(workdir), "20000000"],
        stdout=subprocess.PIPE,
        text=True,
    )
    met: set[str] = set()
    try:
        assert flipper.stdout is not None and flipper.stdout.readline().strip() == "ready"
        for step in range(20):
            # The exchanges change both names under the collector at every step; the code
            # itself only writes a file of its own (it never opens the flipped names).
            ran = sandbox.run(f"open('step-{step}.txt', 'w').write('{step}')")
            assert ran.result.status is ExecStatus.OK, ran.text
            met.update(a.name for a in ran.result.artifacts if a.name.startswith("race"))
        assert flipper.poll() is None, "the flipper stopped before the steps did"
    finally:
        flipper.kill()
        flipper.wait()
    assert secret.read_text() == sandbox.canaries.secret
    assert met, "the collector never met a flipped name: the race did not run"
    sandbox.assert_usable()
