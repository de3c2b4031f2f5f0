"""One conformance suite for every execution mode: same task, same result shape.

Parametrised over ``native``, ``restricted`` (in the confined worker), ``restricted-in-process``
and ``dsl``. A task the DSL can express runs on all four, written once in Python and once in the
DSL (:meth:`Harness.source`); tasks that need Python itself (module state, ``reset``, files) run
on the Python backends only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import Backend, BackendSession, SessionSpec
from safeexec.backends.dsl import DslBackend
from safeexec.backends.native import NativeBackend
from safeexec.backends.restricted import RestrictedBackend
from safeexec.capabilities.gateway import CapabilitySet, tool
from safeexec.dsl.limits import DslLimits
from safeexec.model.values import ExecRequest, ExecResult, ExecStatus, Limits


class _UnplannedIterations(DslBackend):
    """Iterations are limited by time here, not by the plan, so the timeout tests can run long
    (as a policy's ``[dsl] max_iterations`` would allow)."""

    def open(self, spec: SessionSpec) -> BackendSession:
        return super().open(dataclasses.replace(spec, dsl=DslLimits(max_iterations=10**12)))


PYTHON_BACKENDS: dict[str, Callable[[], Backend]] = {
    "native": NativeBackend,
    "restricted": RestrictedBackend,
    "restricted-in-process": lambda: RestrictedBackend(in_process=True),
}
BACKENDS: dict[str, Callable[[], Backend]] = {
    **PYTHON_BACKENDS,
    "dsl": _UnplannedIterations,
}
IMPORTS = ("math", "json")
every_backend = pytest.mark.parametrize("backend", list(BACKENDS), indirect=True)
python_backends = pytest.mark.parametrize("backend", list(PYTHON_BACKENDS), indirect=True)


@pytest.fixture(scope="module")
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    instance = BACKENDS[request.param]()
    yield instance
    close = getattr(instance, "close", None)
    if close is not None:
        close()


class Harness:
    def __init__(self, backend: Backend, tmp_path: Path) -> None:
        self.backend = backend
        self.dsl = isinstance(backend, DslBackend)
        self.tmp_path = tmp_path
        self.blobs = BlobStore(tmp_path / "blobs")
        self.sessions: list[BackendSession] = []

    def open(self, *, tools: CapabilitySet | None = None) -> BackendSession:
        workdir = self.tmp_path / f"work-{len(self.sessions)}"
        workdir.mkdir()
        session = self.backend.open(
            SessionSpec(
                workdir=workdir, limits=Limits(), blobs=self.blobs, tools=tools, imports=IMPORTS
            )
        )
        self.sessions.append(session)
        return session

    def source(self, *, python: str, dsl: str) -> str:
        """The task's program in the language of the backend under test."""
        return dsl if self.dsl else python

    def run(self, session: BackendSession, code: str, **limits: float) -> ExecResult:
        request = ExecRequest(action_id="c", code=code, limits=Limits(**limits))  # type: ignore[arg-type]
        return session.run(request)

    def stdout(self, result: ExecResult) -> str:
        return self.blobs.get(result.stdout).decode()

    def stderr(self, result: ExecResult) -> str:
        return self.blobs.get(result.stderr).decode()


@pytest.fixture
def harness(backend: Backend, tmp_path: Path) -> Iterator[Harness]:
    h = Harness(backend, tmp_path)
    yield h
    for session in h.sessions:
        session.close()


@every_backend
def test_same_program_same_result(harness: Harness) -> None:
    session = harness.open()
    code = harness.source(
        python="import math\nprint('sum', sum(range(10)))\nmath.factorial(5)",
        dsl="print('sum', sum(range(10)))\nreturn 5 * 4 * 3 * 2",
    )
    result = harness.run(session, code)
    assert result.status is ExecStatus.OK and result.exit_code == 0
    assert harness.stdout(result) == "sum 45\n120\n"
    assert harness.stderr(result) == "" and result.message == "" and not result.truncated


@every_backend
def test_an_error_is_an_error_status_with_the_exception(harness: Harness) -> None:
    session = harness.open()
    code = harness.source(python="def f():\n    return 1 / 0\nf()", dsl="x = 0\nreturn 1 / x")
    result = harness.run(session, code)
    assert result.status is ExecStatus.ERROR and result.exit_code == 1
    assert result.message == "ZeroDivisionError: division by zero"
    stderr = harness.stderr(result)
    assert stderr.startswith("Traceback") and "<cell-" in stderr
    assert stderr.rstrip().endswith("ZeroDivisionError: division by zero")


@python_backends
def test_state_persists_between_calls_and_reset_forgets_it(harness: Harness) -> None:
    session = harness.open()
    assert harness.run(session, "counter = {'n': 1}").status is ExecStatus.OK
    assert harness.stdout(harness.run(session, "counter['n'] += 1\ncounter['n']")) == "2\n"
    session.reset()
    result = harness.run(session, "counter")
    assert result.status is ExecStatus.ERROR and result.message.startswith("NameError")


@every_backend
@pytest.mark.parametrize("limit", ["wall_seconds", "cpu_seconds"])
def test_an_endless_loop_is_a_timeout(harness: Harness, limit: str) -> None:
    session = harness.open()
    limits = {"wall_seconds": 30.0, "cpu_seconds": 30.0, limit: 0.5}
    # The DSL has no unbounded loop: ten billion iterations stand in for one.
    spin = harness.source(
        python="while True:\n    pass",
        dsl="n = 0\nfor i in range(100000):\n    for j in range(100000):\n        n += 1\nreturn n",
    )
    result = harness.run(session, spin, **limits)
    assert result.status is ExecStatus.TIMEOUT and result.exit_code is None
    assert any(e.kind == "limit_hit" and e.limit == limit for e in result.events)
    assert harness.stdout(harness.run(session, "print('alive')")) == "alive\n"


@every_backend
def test_output_over_the_cap_is_truncated_head_and_tail(harness: Harness) -> None:
    session = harness.open()
    result = harness.run(session, "for i in range(2000):\n    print('line', i)", output_bytes=200)
    assert result.status is ExecStatus.OK and result.truncated
    out = harness.stdout(result)
    assert out.startswith("line 0\n") and out.endswith("line 1999\n")
    assert "bytes omitted" in out and len(out) < 300
    assert any(e.kind == "limit_hit" and e.limit == "output_bytes" for e in result.events)


@every_backend
def test_there_is_no_network(harness: Harness) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.3)
    port = listener.getsockname()[1]
    hits: list[object] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            hits.append(listener.accept())

    thread = threading.Thread(target=accept)
    thread.start()
    session = harness.open()
    python = f"""
try:
    import socket
    socket.create_connection(('127.0.0.1', {port}), timeout=1)
    print('connected')
except Exception as exc:
    print('no network:', type(exc).__name__)
"""
    dsl = f"s = socket()\nreturn connect(s, '127.0.0.1', {port})"
    result = harness.run(session, harness.source(python=python, dsl=dsl))
    thread.join()
    listener.close()
    assert hits == []
    if harness.dsl:  # the DSL has no such operation: the checker refuses the program
        assert result.status is ExecStatus.ERROR
        assert "SX701 unknown tool or op `socket`" in result.message
    else:
        assert result.status is ExecStatus.OK and "no network" in harness.stdout(result)


@every_backend
def test_tools_only_through_capabilities(harness: Harness) -> None:
    calls: list[str] = []

    @tool(effects=["write"])
    def record(note: str) -> dict[str, object]:
        calls.append(note)
        return {"saved": note, "count": len(calls)}

    caps = CapabilitySet()
    caps.grant(record, max_calls=1)
    session = harness.open(tools=caps)

    def call(note: str) -> str:
        return harness.source(
            python=f"record('{note}')['count']", dsl=f"return record(note='{note}')['count']"
        )

    result = harness.run(session, call("first"))
    assert result.status is ExecStatus.OK and harness.stdout(result) == "1\n"
    assert [e.kind for e in result.events] == ["tool_called"]
    refused = harness.run(session, call("second"))
    assert refused.status is ExecStatus.ERROR
    if harness.dsl:  # the plan (one call) is refused before anything runs
        assert "SX704" in refused.message and refused.events == ()
    else:
        assert "call limit" in refused.message
        assert [e.kind for e in refused.events] == ["tool_refused"]
    assert calls == ["first"]
    unbound = harness.run(harness.open(), call("third"))
    assert unbound.status is ExecStatus.ERROR
    assert ("SX701" in unbound.message) if harness.dsl else unbound.message.startswith("NameError")


@python_backends
def test_files_written_in_the_workdir_are_artifacts(harness: Harness) -> None:
    session = harness.open()
    result = harness.run(session, "with open('report.txt', 'w') as fh:\n    fh.write('done')")
    assert result.status is ExecStatus.OK
    (artifact,) = result.artifacts
    assert artifact.name == "report.txt" and artifact.media_type == "text/plain"
    assert harness.blobs.get(artifact.blob) == b"done"
