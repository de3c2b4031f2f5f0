"""Every rung of the confinement ladder, on this machine: a root host, a container's root (a
runtime's seccomp filter and capability set), its unprivileged user, an unprivileged host, and
root of a user namespace that maps root alone. In each: native and restricted sessions run
code and report the rung (so do their results and audit events), ``doctor`` prints the rung
and exits as documented, and confinement in a regressed order loses the layer it broke.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from safeexec.backends.native.backend import supported_layers
from safeexec.cli.doctor import EXIT_OK, EXIT_REQUIREMENTS_UNMET
from safeexec.sandbox.ladder import RUNG_LAYERS, Rung, meets
from safeexec.sandbox.layers import Layer

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from launcher import command  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the rung launcher starts as root")

# The environment the launcher simulates, and the rung a session must reach there.
EXPECTED = {
    "host": Rung.FULL,
    "container-root": Rung.CONTAINER,
    "container-root-cgroup": Rung.CONTAINER,  # and its cgroup layers (below)
    "container-root-cgroup2": Rung.CONTAINER,  # cgroup v2, its own group only (below)
    # Root, but no uid of its own (and doctor says why): Python beneath /root, or no CAP_SETUID.
    "container-root-hidden-python": Rung.UNPRIVILEGED,
    "container-root-no-capabilities": Rung.UNPRIVILEGED,
    "container-nobody": Rung.UNPRIVILEGED,
    "nobody": Rung.UNPRIVILEGED,
    "userns-root": Rung.UNPRIVILEGED,
    "no-landlock": Rung.MINIMAL,  # below the default pack's rung: refused there
}
DEFAULT_PACK_RUNG = Rung.UNPRIVILEGED
_TIMEOUT_SECONDS = 300


def _host_gives_full() -> bool:
    supported = supported_layers()
    return all(supported[layer].active for layer in RUNG_LAYERS[Rung.FULL])


def _skip_unless_possible(env: str) -> None:
    if env == "host" and not _host_gives_full():
        pytest.skip("this machine's root does not give the full rung")


@cache
def _probe(env: str) -> dict[str, Any]:
    done = subprocess.run(
        command(env, [sys.executable, str(HERE / "rung_probe.py")]),
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def _doctor(env: str, policy: str) -> subprocess.CompletedProcess[str]:
    cli = [sys.executable, "-c", "from safeexec.cli.app import main; main()"]
    return subprocess.run(
        command(env, [*cli, "doctor", "--policy", policy]),
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_SECONDS,
        check=False,
    )


@pytest.mark.parametrize("env", sorted(EXPECTED))
def test_a_session_reaches_the_rung_its_environment_gives(env: str) -> None:
    _skip_unless_possible(env)
    report = _probe(env)
    assert report["rung"] == EXPECTED[env].value, report["missing"]


@pytest.mark.parametrize("env", sorted(EXPECTED))
def test_a_rung_below_the_required_one_is_refused_in_one_line_naming_layer_and_fix(
    env: str,
) -> None:
    _skip_unless_possible(env)
    report = _probe(env)
    refused = report["refused_full"]
    if EXPECTED[env] is Rung.FULL:
        assert refused is None
        return
    assert refused is not None and "\n" not in refused and "Traceback" not in refused
    assert "the full rung needs" in refused and "to get it:" in refused
    assert any(f"{name} (" in refused for name in report["missing"])


def test_a_container_with_a_writable_cgroup_gives_sessions_their_cgroup_layers() -> None:
    report = _probe("container-root-cgroup")
    assert not [name for name in report["missing"] if name.startswith("cgroup_")]
    assert "cgroup_memory" in _probe("container-root")["missing"]


def test_a_container_on_cgroup_v2_makes_session_leaves_in_its_own_group() -> None:
    """Docker --cgroupns=private on a v2 host: the worker and a daemon it left behind are in a
    leaf of the container's group, gone with the session; each controller is enforced (the
    host then moved into a leaf beside the sessions') or reported missing with the reason."""
    done = subprocess.run(
        command("container-root-cgroup2", [sys.executable, str(HERE / "cgroup2_probe.py")]),
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["status"] == "ok" and report["subtree"] == "/sys/fs/cgroup"
    assert report["worker_group"].startswith("/safeexec-") and len(report["held"]) >= 2
    assert report["alive_after_close"] == [] and report["groups_after_close"] in (
        [],
        ["safeexec-host"],
    )
    layers = report["layers"]
    if any(status["active"] for status in layers.values()):
        assert report["host_after"] == "/safeexec-host" and report["moved"]
    for status in layers.values():
        assert status["active"] or "cgroup.controllers" in status["detail"], status


def test_a_container_root_that_cannot_give_a_uid_of_its_own_keeps_the_hosts() -> None:
    assert "own_uid" in _probe("container-root-hidden-python")["missing"]
    assert "own_uid" in _probe("container-root-no-capabilities")["missing"]
    assert "own_uid" not in _probe("container-root")["missing"]


@pytest.mark.parametrize("mode", ["native", "restricted"])
@pytest.mark.parametrize("env", sorted(EXPECTED))
def test_sessions_run_code_and_every_event_records_the_rung(env: str, mode: str) -> None:
    _skip_unless_possible(env)
    seen = _probe(env)[mode]
    if not meets(EXPECTED[env], DEFAULT_PACK_RUNG):
        refused = seen["refused"]
        assert "\n" not in refused and "landlock (" in refused and "to get it:" in refused
        return
    assert seen["text"].endswith("42"), seen
    assert seen["result_rung"] == seen["audit_rung"] == EXPECTED[env].value


@pytest.mark.parametrize("env", sorted(EXPECTED))
def test_confinement_in_a_regressed_order_loses_the_layer_on_every_rung(env: str) -> None:
    _skip_unless_possible(env)
    order = _probe(env)["order"]
    # The production order gives both; putting either before no_new_privs loses it, since the
    # session has dropped CAP_SYS_ADMIN (or never had it) by then: on every rung.
    assert order["production"]["seccomp"] and order["production"]["no_new_privs"]
    assert not order["seccomp_before_no_new_privs"]["seccomp"]
    if Layer.LANDLOCK in RUNG_LAYERS[EXPECTED[env]]:  # not on a kernel without it
        assert order["production"]["landlock"]
        assert not order["landlock_before_no_new_privs"]["landlock"]


@pytest.mark.parametrize("env", sorted(EXPECTED))
def test_doctor_prints_the_rung_and_exits_by_the_policy(env: str) -> None:
    _skip_unless_possible(env)
    rung = EXPECTED[env]
    default = _doctor(env, "default")
    wanted = EXIT_OK if meets(rung, DEFAULT_PACK_RUNG) else EXIT_REQUIREMENTS_UNMET
    assert default.returncode == wanted, default.stdout[-3000:] + default.stderr[-2000:]
    assert f"rung: {rung.value}\n" in default.stdout
    strict = _doctor(env, "strict")  # requires the full rung
    wanted = EXIT_OK if rung is Rung.FULL else EXIT_REQUIREMENTS_UNMET
    assert strict.returncode == wanted, strict.stdout[-3000:]
    if rung is not Rung.FULL:
        assert "NOT MET: rung full" in strict.stdout
        # Never "all layers active" while one is missing (the nobody-without-cgroups case).
        assert "all layers active" not in default.stdout
        assert "how to get them:" in default.stdout


@pytest.mark.parametrize("env", ["container-root-cgroup", "container-nobody"])
def test_without_an_ipc_namespace_a_session_reaches_no_ipc_object(env: str, tmp_path: Path) -> None:
    # The two ways the host's System V objects were reachable: a charged shmget by key (memory
    # cgroup, other uid, a 0666 segment) and shmat by id (no cgroup, the host's own uid).
    assert "ipcns" in _probe(env)["missing"]
    escapes = HERE.parent / "escapes" / "test_shared_memory_between_sessions.py"
    done = subprocess.run(
        command(
            env,
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                "traversable_tmp",
                f"--basetemp=/tmp/safeexec-rungs-ipc-{env}",
                str(escapes),
                "-k",
                "native",
            ],
        ),
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_SECONDS,
        check=False,
        env={**os.environ, "PYTHONPATH": str(HERE)},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout, done.stdout[-2000:]
