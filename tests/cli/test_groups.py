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


def _generation(value: object) -> int | None:
    """The generation ``value`` is in (None: frozen, or not tracked)."""
    for generation in range(3):
        if any(o is value for o in gc.get_objects(generation=generation)):
            return generation
    return None


def test_a_one_shot_command_is_never_collected_and_leaves_what_it_made_old(
    collections: list[int],
) -> None:
    with one_shot():
        kept = [[i] for i in range(50_000)]  # far past the young generation's threshold
        during = list(collections)
    assert during == []
    assert gc.isenabled()
    # Old, not young: the first collection after the pause would scan all of it.
    assert _generation(kept[-1]) == 2


def test_a_second_one_shot_command_still_leaves_what_it_made_old() -> None:
    # The first pause thaws what the interpreter froze at start (3.12): the second one promotes.
    with one_shot():
        pass
    with one_shot():
        kept = [[i] for i in range(50_000)]
    assert _generation(kept[-1]) == 2


def test_a_one_shot_command_that_raises_turns_the_collector_back_on() -> None:
    with pytest.raises(ZeroDivisionError), one_shot():
        _ = 1 / 0
    assert gc.isenabled()


def test_a_one_shot_command_leaves_what_the_process_froze_frozen() -> None:
    held = [object()]
    gc.freeze()  # as a pre-forking server embedding the CLI might
    try:
        with one_shot():
            [[i] for i in range(100)]
        assert _generation(held) is None
    finally:
        gc.unfreeze()
    assert _generation(held) == 2
