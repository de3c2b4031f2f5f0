"""A template process started ahead (``safeexec run`` starts one before it loads the policy) is
taken over by a backend started with the same options, and its sessions are confined alike."""

from __future__ import annotations

import sys
from pathlib import Path

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.backends.native.template import TemplateProcess
from safeexec.model.values import ExecRequest, ExecStatus, Limits

_CONFINEMENT = ("Seccomp", "Seccomp_filters", "NoNewPrivs", "CapEff", "CapBnd", "CapPrm")


def _confinement(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as fh:
        status = dict(line.rstrip("\n").split(":\t", 1) for line in fh if ":\t" in line)
    return {key: status[key] for key in _CONFINEMENT}


def _session_confinement(backend: NativeBackend, tmp_path: Path) -> tuple[dict[str, str], dict]:
    spec = SessionSpec(limits=Limits(), blobs=BlobStore(tmp_path / "blobs"))
    with backend.open(spec) as session:
        ran = session.run(ExecRequest(action_id="a", code="print(6 * 7)"))
        assert ran.status is ExecStatus.OK
        assert session.pid is not None
        return _confinement(session.pid), {k.value: v.active for k, v in session.layers.items()}


def test_a_session_from_a_template_started_ahead_is_confined_as_any_other(tmp_path: Path) -> None:
    early = TemplateProcess(python=sys.executable, preload=(), pool_size=1)
    ahead = NativeBackend(pool_size=1)
    own = NativeBackend(pool_size=1)
    try:
        ahead.start(early)
        template = ahead._supply.running_template()
        assert template is not None and template._process is early.process
        status, layers = _session_confinement(ahead, tmp_path / "ahead")
        assert status["Seccomp"] == "2" and status["NoNewPrivs"] == "1"
        assert int(status["CapEff"], 16) == 0
        assert int(status["CapBnd"], 16) == 0  # emptied by the template, inherited
        # The same filter and layers as a session of a template the backend starts itself.
        assert (status, layers) == _session_confinement(own, tmp_path / "own")
    finally:
        ahead.close()
        own.close()


def test_a_template_started_with_other_options_is_closed_not_taken_over() -> None:
    early = TemplateProcess(python=sys.executable, preload=(), pool_size=3)
    backend = NativeBackend(pool_size=1)
    try:
        backend.start(early)
        assert early.process.wait(timeout=30) is not None
        template = backend._supply.running_template()
        assert template is not None and template._process is not early.process
    finally:
        backend.close()


def test_a_template_started_ahead_of_a_running_one_is_closed() -> None:
    backend = NativeBackend(pool_size=1)
    try:
        backend.start()
        early = TemplateProcess(python=sys.executable, preload=(), pool_size=1)
        backend.start(early)
        assert early.process.wait(timeout=30) is not None
    finally:
        backend.close()
