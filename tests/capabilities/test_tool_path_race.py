"""The path TOCTOU race, for real: a second process flips a path between a file and a link.

While the host tool is called hundreds of times, another process exchanges ``f`` (a regular file)
with ``g`` (a symlink to a host canary) as fast as it can, a bounded number of times. The bound
path never returns the canary; a fixture that restores the old check (``realpath`` beneath the
root, then the tool opens the pathname again) shows the same race does return it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from safeexec.capabilities import targets as tool_targets
from safeexec.capabilities.gateway import CapabilitySet, tool

CALLS = 600  # at least; then on until the race ran both ways (under load the flipper can sit
MAX_CALLS = 20_000  # out hundreds of calls), at most this many
OLD_CALLS = 50_000  # the old check leaks within a few thousand calls; stop at the first leak
# renameat2(RENAME_EXCHANGE) in a tight loop, a bounded number of times (it stops by itself).
_FLIPPER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
os.chdir(sys.argv[1])
exchange = libc.renameat2
AT_FDCWD, RENAME_EXCHANGE = -100, 2
print("ready", flush=True)
for _ in range(int(sys.argv[2])):
    if exchange(AT_FDCWD, b"f", AT_FDCWD, b"g", RENAME_EXCHANGE) != 0:
        sys.exit(ctypes.get_errno())
"""


class _Pathname:
    """The old behaviour: a realpath checked beneath the root, then opened again by name."""

    def __init__(self, root: str, value: str) -> None:
        try:
            resolved = os.path.realpath(os.path.join(root, value))
        except OSError:  # realpath itself can lose the race (EINVAL from readlink)
            raise tool_targets.TargetRefused("unresolvable") from None
        if not resolved.startswith(root + os.sep):
            raise tool_targets.TargetRefused("outside the root")
        self.path = os.path.join(root, value)
        self.relative = value

    def read_text(self) -> str:
        with open(self.path) as handle:
            return handle.read()


@pytest.fixture
def old_pathname_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        tool_targets.BoundPath,
        "_resolve",
        classmethod(lambda cls, root, value: _Pathname(root, value)),
    )


@pytest.fixture
def raced(tmp_path: Path) -> Iterator[tuple[CapabilitySet, subprocess.Popen[str]]]:
    root = tmp_path / "root"
    root.mkdir()
    canary = tmp_path / "canary.txt"
    canary.write_text("CANARY")
    (root / "f").write_text("plain")
    (root / "g").symlink_to(canary)

    @tool(root=root, effects=["read"])
    def read(path: Path) -> str:
        return path.read_text()

    caps = CapabilitySet()
    caps.grant(read)
    flipper = subprocess.Popen(
        [sys.executable, "-c", _FLIPPER, str(root), "100000000"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert flipper.stdout is not None and flipper.stdout.readline().strip() == "ready"
    try:
        yield caps, flipper
    finally:
        flipper.kill()
        flipper.wait()


def _race(
    caps: CapabilitySet, flipper: subprocess.Popen[str], *, calls: int, both_ways: bool
) -> dict[str, int]:
    """Call the tool up to ``calls`` times: until the canary comes back or, with ``both_ways``
    and at least :data:`CALLS` made, until both a plain read and a refusal were seen."""
    seen = {"plain": 0, "CANARY": 0, "refused": 0}
    for made in range(1, calls + 1):
        reply = caps.invoke("read", {"args": ["f"], "kwargs": {}})
        if reply.ok:
            seen[str(reply.value)] += 1
        else:
            seen["refused"] += 1
        if seen["CANARY"] or (both_ways and made >= CALLS and seen["plain"] and seen["refused"]):
            break
    assert flipper.poll() is None, "the flipper stopped before the calls did"
    return seen


def test_a_path_flipped_to_a_link_during_calls_never_returns_the_canary(
    raced: tuple[CapabilitySet, subprocess.Popen[str]],
) -> None:
    seen = _race(*raced, calls=MAX_CALLS, both_ways=True)
    assert seen["CANARY"] == 0, seen
    assert seen["plain"] > 0 and seen["refused"] > 0, seen  # the race really ran both ways


def test_the_race_returns_the_canary_under_the_old_pathname_check(
    old_pathname_check: None, raced: tuple[CapabilitySet, subprocess.Popen[str]]
) -> None:
    seen = _race(*raced, calls=OLD_CALLS, both_ways=False)
    assert seen["CANARY"] > 0, seen
