"""A native session's CPU meter: what each call is charged, and the idle budget between calls."""

from __future__ import annotations

from safeexec.backends.native.meters import CpuMeter


def test_a_call_is_charged_from_where_the_last_one_ended() -> None:
    meter = CpuMeter(idle_budget=1.0)
    assert meter.end_call(2.0, call_start=0.5, budget=3.0) == 1.5  # the first: from its start
    # Leftover processes used 0.25 s between the calls: the next call pays for them.
    assert meter.end_call(3.0, call_start=2.25, budget=3.0) == 1.0
    assert meter.idle_base == meter.last_reading == 3.0
    assert meter.idle_budget == 3.0


def test_a_counter_that_went_back_counts_from_the_calls_start() -> None:
    meter = CpuMeter(idle_budget=1.0)
    meter.end_call(5.0, call_start=0.0, budget=1.0)
    # A new worker (a new cgroup) reads lower than what was charged.
    assert meter.end_call(0.75, call_start=0.25, budget=1.0) == 0.5


def test_unbilled_cpu_is_charged_once() -> None:
    meter = CpuMeter(idle_budget=1.0)
    assert meter.take_unbilled(4.0) == 0.0  # no call yet
    meter.end_call(1.0, call_start=0.0, budget=1.0)
    assert meter.take_unbilled(1.5) == 0.5
    assert meter.take_unbilled(1.5) == 0.0
    assert meter.end_call(2.0, call_start=1.75, budget=1.0) == 0.5  # from 1.5, the last charge


def test_the_idle_budget_is_the_last_calls_cpu_limit() -> None:
    meter = CpuMeter(idle_budget=10.0)
    meter.end_call(1.0, call_start=0.0, budget=2.0)
    assert not meter.idle_overrun(3.0)
    assert meter.idle_overrun(3.25)
