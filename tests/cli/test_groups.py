"""What the commands share: a one-shot command's collector pause."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from safeexec.cli.groups import one_shot


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of every collection made while the test runs."""
    seen: list[int] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(note)
    try:
        yield seen
    finally:
        gc.callbacks.remove(note)


def test_a_one_shot_command_is_never_collected_and_leaves_what_it_made_old(
    collections: list[int],
) -> None:
    frozen = gc.get_freeze_count()
    with one_shot():
        kept = [[i] for i in range(50_000)]  # far past the young generation's threshold
    young = gc.get_count()[0]
    assert collections == []
    assert gc.isenabled()
    # Old, not young (the first collection after the pause would scan all of it), nor frozen.
    assert young < 100
    assert any(o is kept[-1] for o in gc.get_objects(generation=2))
    assert gc.get_freeze_count() == frozen


def test_a_one_shot_command_that_raises_turns_the_collector_back_on(
    collections: list[int],
) -> None:
    with pytest.raises(ZeroDivisionError), one_shot():
        _ = 1 / 0
    assert gc.isenabled()


def test_a_one_shot_command_leaves_what_the_process_froze_frozen() -> None:
    gc.freeze()  # as a pre-forking server embedding the CLI might
    try:
        frozen = gc.get_freeze_count()
        with one_shot():
            [[i] for i in range(100)]
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
