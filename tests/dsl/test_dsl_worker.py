"""The ``dsl`` mode runs programs in the confined worker: not in the host process, with tools
reached through the worker channel and the session's gateway, and ``dsl-inprocess`` only when a
pack names it."""

from __future__ import annotations

import dataclasses
import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dsl_support import granted, run, worker_backend

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.dsl import DslBackend, DslSession, InProcessDslBackend
from safeexec.backends.registry import default_backend
from safeexec.dsl.front import check_source
from safeexec.dsl.limits import DslLimits
from safeexec.dsl.plan import Plan
from safeexec.dsl.signatures import signatures_of
from safeexec.gate import check
from safeexec.model.values import Action, ExecRequest, ExecStatus, Limits, Verdict
from safeexec.policy.loader import load_policy
from safeexec.sandbox.dsl_executor import DslBounds
from safeexec.sandbox.dsl_runtime import DslRuntime

PROGRAM = "xs = map(range(5), lambda i: i * i)\nreturn xs\n"


def _poison_the_hosts_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every helper the program uses fail if it runs in this (the host) process."""

    def ran_in_the_host(*args: object, **kwargs: object) -> object:
        raise AssertionError(f"ran in the host process {os.getpid()}")

    for name in ("op_map", "op_range", "h_give", "h_mul"):
        monkeypatch.setattr(DslRuntime, name, ran_in_the_host)


def test_a_dsl_program_runs_in_the_worker_process_not_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker is forked from a template started by execve, so it has its own copy of the
    # runtime: the host's poisoned helpers never run, and the program's answer is right.
    _poison_the_hosts_runtime(monkeypatch)
    (tmp_path / "work").mkdir()
    spec = SessionSpec(blobs=BlobStore(tmp_path / "b"), tools=granted(), workdir=tmp_path / "work")
    session = worker_backend().open(spec)
    assert isinstance(session, DslSession)
    try:
        result = session.run(ExecRequest(action_id="pid", code=PROGRAM, limits=Limits()))
        worker = session.pid
        assert worker is not None and worker != os.getpid()
        # The kernel's word on that process: a session forked from the template.
        cmdline = Path(f"/proc/{worker}/cmdline").read_bytes().split(b"\0")
        assert b"safeexec.sandbox.zygote" in cmdline
    finally:
        session.close()
    assert result.status is ExecStatus.OK, result.message
    assert spec.blobs.get(result.stdout) == b"[0, 1, 4, 9, 16]\n"


def test_the_in_process_variant_does_run_in_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The contrast that shows the test above can fail: in-process, the poison is reached.
    _poison_the_hosts_runtime(monkeypatch)
    ran = run(PROGRAM, tmp_path, backend=InProcessDslBackend())
    assert ran.result.status is ExecStatus.ERROR
    assert f"ran in the host process {os.getpid()}" in ran.result.message


_CLI_PROBE = """
import json, os, sys
from safeexec.backends.native.native_session import NativeSession
from safeexec.sandbox.dsl_executor import DslBounds
from safeexec.sandbox.dsl_runtime import DslRuntime

def ran_in_the_host(*args, **kwargs):
    raise AssertionError("ran in the host process")

for name in ("op_map", "op_range", "h_give", "h_mul"):
    setattr(DslRuntime, name, ran_in_the_host)
seen = []
plain_run = NativeSession.run
def run(self, request, **kwargs):
    result = plain_run(self, request, **kwargs)
    pid = self.pid
    seen.append({"pid": pid, "cmdline": open(f"/proc/{pid}/cmdline", "rb").read().decode()})
    return result
NativeSession.run = run
from safeexec.cli.app import app
out, sys.stdout = sys.stdout, sys.stderr
try:
    app(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
out.write(json.dumps({"code": code, "host": os.getpid(), "workers": seen}))
"""


def test_safeexec_run_mode_dsl_runs_the_program_in_a_worker_process(tmp_path: Path) -> None:
    (tmp_path / "p.dsl").write_text(PROGRAM, encoding="utf-8")
    argv = ["run", "--mode", "dsl", "--json", "--state-dir", str(tmp_path / "state"), "p.dsl"]
    done = subprocess.run(
        [sys.executable, "-c", _CLI_PROBE, *argv],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        timeout=120,
    )
    report = json.loads(done.stdout)
    assert report["code"] == 0, done.stderr
    (worker,) = report["workers"]
    assert worker["pid"] != report["host"]
    assert "safeexec.sandbox.zygote" in worker["cmdline"]
    outcome = json.loads(done.stderr.strip().splitlines()[-1])
    assert outcome["result"]["status"] == "ok"
    assert outcome["result"]["displays"][0]["items"][0]["text"] == "[0, 1, 4, 9, 16]"


def test_tool_calls_cross_the_worker_channel_to_the_sessions_gateway(tmp_path: Path) -> None:
    caps = granted()
    source = 'quotes = map(["ACME", "INIT"], lambda t: get_quote(ticker=t))\nreturn len(quotes)'
    ran = run(source, tmp_path, caps=caps)
    assert ran.result.status is ExecStatus.OK, ran.result.message
    assert [e.kind for e in ran.result.events] == ["tool_called", "tool_called"]
    assert caps.statistics().calls == 2 and ran.result.usage.tool_calls == 2


def test_the_dsl_mode_can_require_confinement_layers(tmp_path: Path) -> None:
    # In the worker the mode has the native layers: a required one is checked, not refused.
    native = worker_backend()._native_backend()
    active = {layer.value for layer, status in native.supported.items() if status.active}
    available = {"rlimits", "seccomp", "landlock", "no_new_privs"} & active
    assert "rlimits" in available
    (tmp_path / "work").mkdir()
    spec = SessionSpec(
        blobs=BlobStore(tmp_path / "b"), workdir=tmp_path / "work", require=frozenset(available)
    )
    session = worker_backend().open(spec)
    try:
        result = session.run(ExecRequest(action_id="r", code="return 1", limits=Limits()))
    finally:
        session.close()
    assert result.status is ExecStatus.OK, result.message


def test_the_registry_makes_the_worker_mode_and_the_in_process_one_by_name() -> None:
    assert isinstance(default_backend("dsl"), DslBackend)
    assert isinstance(default_backend("dsl-inprocess"), InProcessDslBackend)
    assert InProcessDslBackend.__doc__ is not None
    assert "not a security boundary" in " ".join(InProcessDslBackend.__doc__.split())


def test_dsl_inprocess_is_allowed_only_where_a_pack_names_it() -> None:
    policy = load_policy("default")
    assert "dsl-inprocess" not in policy.backends.allowed
    action = Action.create("return 1", language="dsl")
    assert check(action, policy, backend="dsl-inprocess").decision.verdict is Verdict.DENY


def test_the_plans_calls_are_enforced_in_the_host_whatever_the_worker_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker that runs more than the plan (here: code calling get_quote three times sent for
    # a plan of one, and bounds that would let it make 100): the host's gateway stops the 2nd.
    from safeexec.backends import dsl as dsl_backend

    planned = 'q = get_quote(ticker="ACME")\nreturn 1'
    more = 'a = get_quote(ticker="ACME")\nb = get_quote(ticker="INIT")\nreturn 1'
    other = check_source(more, signatures_of(granted()))
    assert other.accepted
    sent = marshal.dumps(other.code())
    monkeypatch.setattr(dsl_backend.marshal, "dumps", lambda code: sent)
    plain_bounds = dsl_backend._bounds

    def generous(plan: Plan, limits: DslLimits) -> DslBounds:
        made = plain_bounds(plan, limits)
        return dataclasses.replace(made, calls=dict.fromkeys(made.calls, 100))

    monkeypatch.setattr(dsl_backend, "_bounds", generous)
    caps = granted()
    ran = run(planned, tmp_path, caps=caps)
    assert ran.result.status is ExecStatus.ERROR
    assert "more often than the program's plan allows" in ran.result.message
    assert caps.statistics().calls == 1
    assert [e.kind for e in ran.result.events] == ["tool_called", "tool_refused"]


def test_memory_grown_value_by_value_is_stopped_by_the_workers_limit(tmp_path: Path) -> None:
    # Each string is under the text cap, a thousand of them are not under the session's 64 MiB:
    # the worker's own memory limit stops the program (the host never holds the values).
    source = (
        's = "x"\nfor i in range(19):\n    s = s + s\n'
        "xs = map(range(1000), lambda i: s + str(i))\nreturn len(xs)"
    )
    (tmp_path / "work").mkdir()
    spec = SessionSpec(
        blobs=BlobStore(tmp_path / "b"),
        workdir=tmp_path / "work",
        limits=Limits(memory_bytes=64 * 2**20),
    )
    session = worker_backend().open(spec)
    try:
        result = session.run(ExecRequest(action_id="m", code=source, limits=Limits()))
    finally:
        session.close()
    assert result.status in (ExecStatus.LIMIT_EXCEEDED, ExecStatus.KILLED), result.message
    assert "memory" in result.message.lower() or "MemoryError" in result.message


def test_a_worker_backend_of_another_executor_is_refused() -> None:
    from safeexec.backends.native import NativeBackend
    from safeexec.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="executor='restricted'"):
        DslBackend(native=NativeBackend(executor="restricted"))
