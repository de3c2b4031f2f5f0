"""The collector's pause: off while it lasts, back on after it, whatever happens inside."""

from __future__ import annotations

import gc

import pytest

from safeexec._support.collector import gc_paused


def test_a_pause_turns_the_collector_back_on_after_an_exception() -> None:
    with pytest.raises(ZeroDivisionError), gc_paused():
        assert not gc.isenabled()
        _ = 1 / 0
    assert gc.isenabled()


def test_a_pause_inside_a_pause_leaves_the_collector_off() -> None:
    with gc_paused():
        with gc_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
