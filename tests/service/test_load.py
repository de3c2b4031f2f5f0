"""Bounded load on one server (loopback only; stops by itself): 50 clients x 20 runs, no errors.

The figures (throughput, p50/p99 as ratios to a direct ``Session.run`` measured in the same
run, server memory before/after) are printed, never asserted: no wall-clock thresholds here.
"""

from __future__ import annotations

from pathlib import Path

from service_load import run_load


def test_fifty_clients_of_twenty_runs_each_finish_without_an_error(tmp_path: Path) -> None:
    report = run_load(tmp_path, clients=50, runs=20)
    print("\n" + report.table())
    assert report.errors == ()
    assert report.completed == 50 * 20
