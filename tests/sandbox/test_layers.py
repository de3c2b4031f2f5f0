"""The worker's layer report is untrusted: anything not clearly active counts as missing."""

from __future__ import annotations

from safeexec.sandbox.layers import ALWAYS_REQUIRED, DEFAULT_REQUIRED, Layer, parse_layer_report


def test_missing_or_malformed_entries_count_as_inactive() -> None:
    report = parse_layer_report(
        {
            "seccomp": {"active": True, "detail": "loaded"},
            "landlock": {"active": "yes"},
            "netns": "active",
        }
    )
    assert report[Layer.SECCOMP].active and report[Layer.SECCOMP].detail == "loaded"
    assert not report[Layer.LANDLOCK].active
    assert not report[Layer.NETNS].active
    assert not report[Layer.PIDNS].active
    assert parse_layer_report(None)[Layer.SECCOMP].active is False


def test_seccomp_and_landlock_are_required_by_default() -> None:
    assert {Layer.SECCOMP, Layer.LANDLOCK} <= DEFAULT_REQUIRED
    assert Layer.RLIMITS in ALWAYS_REQUIRED


def test_the_session_cgroup_is_required_by_default_where_the_host_has_one() -> None:
    assert {Layer.CGROUP_MEMORY, Layer.CGROUP_PIDS, Layer.CGROUP_CPU} <= DEFAULT_REQUIRED
