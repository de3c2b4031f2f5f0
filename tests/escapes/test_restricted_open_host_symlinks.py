"""The restricted ``open`` and links a host process planted in the workdir.

``open`` used to check ``realpath(workdir / name)`` and then open the pathname: a link planted by
another process, or swapped in after the check, was followed to a host file (the in-process mode
runs as the host's own uid, so nothing else stops it). It now resolves like a tool's path
argument (``BoundPath``): no link anywhere on the way, opened through the checked directory's
descriptor. The host plants the links here (sandboxed code has no way to make one).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from escape_support import Canaries
    from restricted_support import BoxFactory


_REFUSALS = ("PermissionError", "FileNotFoundError", "OSError: [Errno 40]")


def _workdir(tmp_path: Path) -> Path:
    return tmp_path / "work-0"  # the first session ``restricted_box`` opens


@pytest.mark.parametrize(
    "name",
    ["leaf", "chain", "dir/f", "inside", "up/../leaf", "dir/../dir/f"],
)
def test_a_planted_link_is_not_followed(
    restricted_box: BoxFactory, canaries: Canaries, tmp_path: Path, name: str
) -> None:
    box = restricted_box()
    work = _workdir(tmp_path)
    secret = canaries.secret_file
    (work / "leaf").symlink_to(secret)
    (work / "hop").symlink_to(secret)
    (work / "chain").symlink_to("hop")
    (work / "dir").symlink_to(secret.parent)
    (work / "up").mkdir()
    (work / "plain.txt").write_text("plain")
    (work / "inside").symlink_to("plain.txt")  # even a link that stays inside is refused
    for mode in ("r", "rb", "a", "r+"):
        outcome = box.run(f"print(open({name!r}, {mode!r}).read(1))")
        assert outcome.status.value == "error", outcome.text
        # Refused as a link, or (the fallback walk opens no link as a directory) as missing.
        assert any(e in outcome.text for e in _REFUSALS), outcome.text
    assert secret.read_text() == canaries.secret
    box.assert_usable()


def test_dotdot_out_of_the_workdir_is_refused(
    restricted_box: BoxFactory, canaries: Canaries, tmp_path: Path
) -> None:
    box = restricted_box()
    up = os.path.relpath(canaries.secret_file, _workdir(tmp_path))
    outcome = box.run(f"open({up!r}).read()")
    assert "outside the working directory" in outcome.text, outcome.text
    outcome = box.run("open('a/../../x', 'w')")
    assert "outside the working directory" in outcome.text, outcome.text


def test_a_link_swapped_in_after_the_check_is_never_followed(
    restricted_box: BoxFactory, canaries: Canaries, tmp_path: Path
) -> None:
    box = restricted_box()
    work = _workdir(tmp_path)
    (work / "t").mkdir()
    (work / "t" / "f").write_text("plain")
    done = threading.Event()

    def flip() -> None:
        # Each state change is one atomic rename: the name is a regular file or a link, always.
        # The next states are made while the name is the plain file: under load each call can
        # wait a scheduler slice, and a write made while it was a link kept it one for most of
        # a run.
        while not done.is_set():
            try:
                (work / "t" / "p").write_text("plain")
                os.symlink(canaries.secret_file, work / "t" / "l")
                os.replace(work / "t" / "l", work / "t" / "f")
                os.replace(work / "t" / "p", work / "t" / "f")
                os.rename(work / "t", work / "t.real")
                os.symlink(canaries.secret_file.parent, work / "t")
                os.unlink(work / "t")
                os.rename(work / "t.real", work / "t")
            except OSError:
                pass

    flipper = threading.Thread(target=flip)
    flipper.start()
    outcomes = []
    try:
        # On a loaded machine the flipper may sit out thousands of opens: each run tries at
        # least 3,000 and goes on (up to 30,000) until the file was read too (the race ran);
        # if even that misses, run again, and hold every run to the same bar.
        for _ in range(5):
            outcome = box.run(
                "seen = {}\nfor attempt in range(30000):\n    try:\n"
                "        text = open('t/f').read()\n    except Exception as exc:\n"
                "        text = type(exc).__name__\n    seen[text] = seen.get(text, 0) + 1\n"
                "    if attempt >= 3000 and 'plain' in seen:\n        break\n"
                "print(sorted(seen.items()))"
            )
            outcomes.append(outcome)
            assert outcome.status.value == "ok", outcome.text
            assert canaries.secret not in outcome.stdout, outcome.text
            if "'plain'" in outcome.stdout:
                break
    finally:
        done.set()
        flipper.join()
    assert "'plain'" in outcomes[-1].stdout, [o.text for o in outcomes]  # the race ran


def test_file_not_found_names_the_path_the_code_wrote(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    outcome = box.run(
        "try:\n    open('missing/data.csv')\nexcept FileNotFoundError as exc:\n"
        "    print(exc.filename)"
    )
    assert outcome.stdout == "missing/data.csv\n", outcome.text
