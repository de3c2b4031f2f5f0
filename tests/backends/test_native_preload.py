"""A template that preloads the data stack: sessions find it imported before any cell imports it,
are confined exactly as sessions of a template without it, and inherit nothing from it but memory
(the imports ran before any confinement, in the template; see ``zygote._preload``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend, NativeSession
from safeexec.model.values import ExecRequest, ExecResult, ExecStatus, Limits
from safeexec.session.preload import DATA_STACK

_CONFINEMENT = ("Seccomp", "Seccomp_filters", "NoNewPrivs", "CapEff", "CapBnd", "CapPrm", "Uid")
_LOADED = "import sys\nprint(sorted(m for m in {names!r} if m in sys.modules))\n"


@pytest.fixture(scope="module")
def preloaded() -> Iterator[NativeBackend]:
    backend = NativeBackend(preload=DATA_STACK, pool_size=1)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def plain() -> Iterator[NativeBackend]:
    backend = NativeBackend(pool_size=1)
    yield backend
    backend.close()


def _open(backend: NativeBackend, tmp_path: Path, name: str) -> NativeSession:
    return backend.open(SessionSpec(limits=Limits(), blobs=BlobStore(tmp_path / name)))


def _run(session: NativeSession, code: str) -> tuple[ExecResult, str]:
    result = session.run(ExecRequest(action_id="a", code=code))
    stdout = session.blobs.get(result.stdout).decode() if result.stdout.size else ""
    return result, stdout


def _status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as fh:
        status = dict(line.rstrip("\n").split(":\t", 1) for line in fh if ":\t" in line)
    # A root host's sessions each take a uid of their own: only whether it is root compares.
    status["Uid"] = str(status["Uid"].split()[0] == "0")
    return {key: status[key] for key in _CONFINEMENT}


def _held(pid: int) -> tuple[list[str], int, list[str]]:
    """A process's descriptors, its thread count, and its mappings shared and writable."""
    fds = sorted(os.listdir(f"/proc/{pid}/fd"), key=int)
    threads = len(os.listdir(f"/proc/{pid}/task"))
    with open(f"/proc/{pid}/maps") as fh:
        shared = [line.strip() for line in fh if line.split()[1][1::2] == "ws"]
    return fds, threads, shared


def test_the_preloaded_modules_are_in_the_session_before_any_cell_imports_them(
    preloaded: NativeBackend, plain: NativeBackend, tmp_path: Path
) -> None:
    for backend, expected in ((preloaded, sorted(DATA_STACK)), (plain, [])):
        with _open(backend, tmp_path, f"{id(backend)}") as session:
            result, stdout = _run(session, _LOADED.format(names=DATA_STACK))
        assert result.status is ExecStatus.OK
        assert stdout == f"{expected}\n"
    assert preloaded.statistics().preloaded == DATA_STACK


def test_a_preloaded_session_is_confined_as_one_without_the_preload(
    preloaded: NativeBackend, plain: NativeBackend, tmp_path: Path
) -> None:
    seen = []
    for backend in (preloaded, plain):
        with _open(backend, tmp_path, f"{id(backend)}") as session:
            result, _stdout = _run(session, "import pandas\nx = pandas.Series([1, 2]).sum()\n")
            assert result.status is ExecStatus.OK and session.pid is not None
            layers = {layer.value: status.active for layer, status in session.layers.items()}
            seen.append((_status(session.pid), layers, result.rung))
    assert seen[0] == seen[1]
    assert seen[0][0]["Seccomp"] == "2" and seen[0][0]["NoNewPrivs"] == "1"


def test_a_preloaded_session_inherits_no_descriptor_thread_or_shared_mapping(
    preloaded: NativeBackend, plain: NativeBackend, tmp_path: Path
) -> None:
    preloaded.start()
    running = preloaded._supply.running_template()
    assert running is not None
    # The process that imported the preload (which may fork again into a pid namespace) and
    # the one that forks sessions: forking a process with more than one thread is unsafe, and
    # a BLAS pool whose threads stayed behind hangs the forked child's first large product.
    for template in {running._process.pid, running.pid}:
        assert _held(template)[1] == 1
    held = []
    for backend in (preloaded, plain):
        with _open(backend, tmp_path, f"{id(backend)}") as session:
            result, _stdout = _run(session, "pass\n")
            assert result.status is ExecStatus.OK and session.pid is not None
            held.append(_held(session.pid))
    fds, threads, shared = held[0]
    # stdin, stdout, stderr and the channel to the host, as without the preload.
    assert fds == ["0", "1", "2", "3"] and held[1][0] == fds
    assert threads == 1
    assert shared == []  # nothing the session could write through to a file behind the wall


def test_the_preloaded_stack_reads_and_writes_no_host_file_beyond_the_wall(
    preloaded: NativeBackend, tmp_path: Path
) -> None:
    secret = tmp_path / "outside" / "secret.csv"
    secret.parent.mkdir()
    secret.write_text("token\nhost-secret-7431\n")
    os.chmod(secret.parent, 0o755)
    os.chmod(secret, 0o644)
    written = tmp_path / "outside" / "written.txt"
    with _open(preloaded, tmp_path, "wall") as session:
        read, stdout = _run(session, f"import pandas\nprint(pandas.read_csv({str(secret)!r}))\n")
        assert read.status is ExecStatus.ERROR
        assert read.error is not None
        assert read.error.name in {"FileNotFoundError", "PermissionError"}
        assert "host-secret" not in stdout
        wrote, _stdout = _run(session, f"import numpy\nnumpy.savetxt({str(written)!r}, [1.0])\n")
        assert wrote.status is ExecStatus.ERROR
    assert not written.exists()


def test_sessions_of_a_template_that_preloaded_numpy_draw_different_numbers(
    preloaded: NativeBackend, tmp_path: Path
) -> None:
    draws = set()
    for index in range(2):
        with _open(preloaded, tmp_path, f"draw-{index}") as session:
            result, stdout = _run(session, "import numpy\nprint(numpy.random.randint(1 << 62))\n")
            assert result.status is ExecStatus.OK
            draws.add(stdout)
    assert len(draws) == 2  # the template's generator state, reseeded in every fork


def test_a_seeded_sessions_forked_child_keeps_numpys_seeded_stream(
    preloaded: NativeBackend, tmp_path: Path
) -> None:
    code = (
        "import os, numpy\n"
        "if os.fork() == 0:\n"
        "    print(numpy.random.randint(1 << 62), flush=True)\n"
        "    os._exit(0)\n"
        "os.wait()\n"
    )
    draws = set()
    for index in range(2):
        spec = SessionSpec(limits=Limits(), blobs=BlobStore(tmp_path / f"s{index}"), seed=5)
        with preloaded.open(spec) as session:
            result, stdout = _run(session, code)
            assert result.status is ExecStatus.OK and stdout.strip()
            draws.add(stdout)
    assert len(draws) == 1  # a seeded run replays, its children's draws included
