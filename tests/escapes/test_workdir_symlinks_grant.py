"""Native code may make symbolic links in the workdir only when the policy grants it.

Landlock withholds ``MAKE_SYM`` from the workdir by default; ``[sandbox] workdir_symlinks = true``
gives it back. Even then a link to a host file leads nowhere: the private root has no host paths,
Landlock grants nothing outside the workdir, and artifacts, downloads, tools and the restricted
``open`` never follow links. The gate's own rules are unchanged by the key (``os.symlink`` stays
refused by name under ``default``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from safeexec import Session
from safeexec.policy.loader import load_policy

if TYPE_CHECKING:
    from escape_support import Canaries

# ``pathlib`` rather than ``os.symlink``, which the default pack's gate refuses by name (SX304):
# the key changes the kernel layer, and that layer is what this test holds to account.
_CODE = """
import pathlib
try:
    pathlib.Path("link").symlink_to({secret!r})
    print("made", pathlib.Path("link").readlink())
except PermissionError:
    print("refused")
try:
    print("read", open("link").read())
except OSError as exc:
    print("unreadable", type(exc).__name__)
"""


@pytest.mark.parametrize("granted", [False, True], ids=["default-deny", "granted"])
def test_symlinks_follow_the_policy_key(canaries: Canaries, tmp_path: Path, granted: bool) -> None:
    policy = load_policy("default")
    policy = dataclasses.replace(
        policy, sandbox=dataclasses.replace(policy.sandbox, workdir_symlinks=granted)
    )
    workdir = tmp_path / "work"
    workdir.mkdir()
    with Session(policy=policy, mode="native", workdir=workdir, state_dir=tmp_path / "s") as s:
        outcome = s.run("```python\n" + _CODE.format(secret=str(canaries.secret_file)) + "```")
    assert outcome.result is not None
    text = outcome.observation.text
    assert canaries.secret not in text, text
    assert outcome.result.artifacts == ()
    if not granted:
        assert "refused" in text and not (workdir / "link").is_symlink(), text
    else:
        assert "made" in text and (workdir / "link").is_symlink(), text
        assert "unreadable" in text, text
    canaries.assert_intact()
