"""The confinement ladder: which rung a layer report reaches, and the order of the last steps."""

from __future__ import annotations

import itertools

import pytest

from safeexec.sandbox.confine import ORDER, Step
from safeexec.sandbox.ladder import GUIDANCE, RUNG_LAYERS, RUNGS, Rung, meets, missing_for, rung_of
from safeexec.sandbox.layers import Layer, LayerStatus


def _report(*absent: Layer) -> dict[Layer, LayerStatus]:
    return {
        layer: LayerStatus(layer=layer, active=layer not in absent, detail="") for layer in Layer
    }


_NAMESPACES = (Layer.NETNS, Layer.IPCNS, Layer.PIDNS, Layer.MOUNTNS, Layer.PROC)
_CGROUPS = (Layer.CGROUP_MEMORY, Layer.CGROUP_PIDS, Layer.CGROUP_CPU)


@pytest.mark.parametrize(
    ("absent", "rung"),
    [
        ((), Rung.FULL),
        ((Layer.OWN_UID, Layer.DISK, Layer.LANDLOCK_NET), Rung.FULL),  # full needs neither
        ((Layer.CGROUP_MEMORY,), Rung.CONTAINER),
        ((*_NAMESPACES, *_CGROUPS), Rung.CONTAINER),
        ((*_NAMESPACES, Layer.OWN_UID), Rung.UNPRIVILEGED),
        ((*_NAMESPACES, Layer.LANDLOCK_NET), Rung.UNPRIVILEGED),
        ((Layer.LANDLOCK,), Rung.MINIMAL),
        ((Layer.SECCOMP,), None),
        ((Layer.NO_NEW_PRIVS,), None),
    ],
)
def test_a_report_reaches_the_strongest_rung_whose_layers_are_all_active(
    absent: tuple[Layer, ...], rung: Rung | None
) -> None:
    assert rung_of(_report(*absent)) is rung


def test_a_layer_missing_from_the_report_counts_as_absent() -> None:
    report = _report()
    del report[Layer.LANDLOCK]
    assert rung_of(report) is Rung.MINIMAL


def test_each_rung_needs_everything_the_rungs_below_it_need() -> None:
    # But full needs no uid of its own nor Landlock's network rules: its pid and network
    # namespaces close what those close on the container rung.
    for stronger, weaker in itertools.pairwise(RUNGS):
        assert RUNG_LAYERS[weaker] <= RUNG_LAYERS[stronger] | {Layer.OWN_UID, Layer.LANDLOCK_NET}


def test_a_requirement_is_met_by_its_rung_or_a_stronger_one() -> None:
    assert meets(Rung.FULL, Rung.CONTAINER)
    assert meets(Rung.CONTAINER, Rung.CONTAINER)
    assert not meets(Rung.UNPRIVILEGED, Rung.CONTAINER)
    assert not meets(None, Rung.MINIMAL)


def test_missing_for_names_what_the_rung_lacks_in_layer_order() -> None:
    assert missing_for(Rung.FULL, _report(Layer.CGROUP_CPU, Layer.NETNS)) == [
        Layer.NETNS,
        Layer.CGROUP_CPU,
    ]
    assert missing_for(Rung.MINIMAL, _report(Layer.NETNS)) == []


def test_every_layer_says_what_it_stops_and_how_to_get_it() -> None:
    assert set(GUIDANCE) == set(Layer)
    assert all(stops and how for stops, how in GUIDANCE.values())


def test_no_new_privs_comes_before_landlock_and_seccomp() -> None:
    # Without CAP_SYS_ADMIN (which the session drops with its capabilities) Landlock and
    # seccomp load only under no_new_privs; tests/rungs shows the regression failing on every
    # rung.
    assert ORDER.index(Step.PRIVDROP) < ORDER.index(Step.NO_NEW_PRIVS)
    assert ORDER.index(Step.NO_NEW_PRIVS) < ORDER.index(Step.LANDLOCK)
    assert ORDER.index(Step.NO_NEW_PRIVS) < ORDER.index(Step.SECCOMP)
    assert set(ORDER) == set(Step)
