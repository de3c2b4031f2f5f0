"""A state dir the sandbox can reach is refused before any cell runs (issue 10, items 1 and 2).

On main, ``--workdir .`` with the default ``./.safeexec`` put the audit log and the blob store
inside the workdir, and a root host chowned them to the session with the rest of the tree. A cell
then swapped ``.safeexec/blobs/<shard>`` for a symlink and the host wrote the cell's stdout, as
root, into a directory of the cell's choosing; it unlinked ``audit.jsonl`` so later events landed
in no log; it rewrote a ``deny`` into an ``allow``. Every overlap of state dir and workdir (inside,
equal, above, through a symlink) is now a ``ConfigurationError`` at ``Session(...)``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from safeexec.backends.native import NativeBackend
from safeexec.errors import ConfigurationError
from safeexec.session.session import Session

# Plant a link in every shard name (whatever the naming scheme), unlink the log, rewrite denials.
ATTACK = """
import pathlib
state = pathlib.Path(bytes.fromhex({state!r}).decode())
blobs = state / "blobs"
for i in range(256):
    shard = blobs / f"{{i:02x}}"
    try:
        if shard.exists():
            shard.rename(blobs / f"moved-{{i:02x}}")
        shard.symlink_to(bytes.fromhex({target!r}).decode(), target_is_directory=True)
    except OSError:
        pass
log = state / "audit.jsonl"
try:
    text = log.read_text()
    log.unlink()
    log.write_text(text.replace('"deny"', '"allow"'))
except OSError:
    pass
print("the host writes this through the planted link")
"""


def _inside(tmp: Path) -> tuple[Path, Path]:
    return tmp / "work" / ".safeexec", tmp / "work"


def _equal(tmp: Path) -> tuple[Path, Path]:
    return tmp / "work", tmp / "work"


def _above(tmp: Path) -> tuple[Path, Path]:
    # The layout main used when no workdir was given: <state_dir>/work/<session_id>.
    return tmp / "state", tmp / "state" / "work" / "s-1"


def _through_a_symlink(tmp: Path) -> tuple[Path, Path]:
    (tmp / "work").mkdir()
    (tmp / "state-link").symlink_to(tmp / "work" / ".safeexec")
    return tmp / "state-link", tmp / "work"


@pytest.mark.parametrize("layout", [_inside, _equal, _above, _through_a_symlink])
def test_a_state_dir_the_cell_could_reach_is_refused_before_anything_runs(
    backend: NativeBackend,
    tmp_path: Path,
    layout: Callable[[Path], tuple[Path, Path]],
) -> None:
    state, workdir = layout(tmp_path)
    workdir.mkdir(parents=True, exist_ok=True)
    target = tmp_path / "root-only"
    target.mkdir(mode=0o700)
    # Hex-encoded paths: the static gate (SX305) would deny literal ones; the OS layers are tested.
    attack = ATTACK.format(state=str(state).encode().hex(), target=str(target).encode().hex())
    with (
        pytest.raises(ConfigurationError, match=r"state_dir=.* overlaps workdir="),
        Session(
            policy="default",
            mode=backend.name,
            backends={backend.name: backend},
            workdir=workdir,
            state_dir=state,
        ) as session,
    ):
        session.run("```python\nimport subprocess\n```")  # a denial, for the rewrite
        session.run(f"```python\n{attack}```")
        session.run("```python\nprint('after the attack')\n```")
    assert os.listdir(target) == [], "the host wrote a file where the cell pointed it"
    assert not (workdir / ".safeexec").exists()
