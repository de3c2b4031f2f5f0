"""What the commands share: a one-shot command's collector pause."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from safeexec.cli.groups import one_shot


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of every collection made while the test runs; unfreezes afterwards."""
    seen: list[int] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(note)
    try:
        yield seen
    finally:
        gc.callbacks.remove(note)
        gc.unfreeze()


def test_a_one_shot_command_is_never_collected_and_freezes_what_it_made(
    collections: list[int],
) -> None:
    frozen = gc.get_freeze_count()
    with one_shot():
        kept = [[i] for i in range(50_000)]  # far past the young generation's threshold
    young = gc.get_count()[0]
    assert collections == []
    assert gc.isenabled()
    # Frozen, not left young: the first collection after the pause would scan all of it.
    assert gc.get_freeze_count() >= frozen + len(kept)
    assert young < 100


def test_a_one_shot_command_that_raises_turns_the_collector_back_on(
    collections: list[int],
) -> None:
    with pytest.raises(ZeroDivisionError), one_shot():
        _ = 1 / 0
    assert gc.isenabled()
