"""``safeexec run`` boots the template of the run's one mode while the gate loads, and only then."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from safeexec.backends.dsl import DslBackend
from safeexec.backends.native import NativeBackend
from safeexec.backends.native.template import TemplateProcess
from safeexec.backends.restricted import RestrictedBackend
from safeexec.cli.run import _warm_backend
from safeexec.policy.loader import load_policy
from safeexec.policy.schema import BackendsConfig


def test_a_mode_the_policy_refuses_starts_nothing() -> None:
    policy = replace(load_policy("default"), backends=BackendsConfig(allowed=("restricted",)))
    assert _warm_backend(policy, "native") is None


def test_a_template_started_ahead_is_closed_when_the_policy_refuses_its_mode() -> None:
    policy = replace(load_policy("default"), backends=BackendsConfig(allowed=("restricted",)))
    early = TemplateProcess(python=sys.executable, preload=(), pool_size=1)
    assert _warm_backend(policy, "native", early) is None
    assert early.process.wait(timeout=30) is not None


def test_a_template_started_ahead_is_closed_when_the_mode_needs_none() -> None:
    policy = replace(
        load_policy("default"),
        backends=BackendsConfig(allowed=("dsl-inprocess", "native"), default="dsl-inprocess"),
    )
    early = TemplateProcess(python=sys.executable, preload=(), pool_size=1)
    assert _warm_backend(policy, None, early) is None
    assert early.process.wait(timeout=30) is not None


def test_modes_without_a_template_start_nothing() -> None:
    policy = replace(
        load_policy("default"),
        backends=BackendsConfig(allowed=("dsl-inprocess", "native"), default="dsl-inprocess"),
    )
    assert _warm_backend(policy, None) is None


@pytest.mark.parametrize(
    ("mode", "kind"),
    [("native", NativeBackend), ("restricted", RestrictedBackend), ("dsl", DslBackend)],
)
def test_the_chosen_mode_gets_its_backend_started(mode: str, kind: type) -> None:
    policy = replace(
        load_policy("default"), backends=BackendsConfig(allowed=("native", "restricted", "dsl"))
    )
    backend = _warm_backend(policy, mode)
    assert isinstance(backend, kind)
    backend.close()


@pytest.mark.parametrize("mode", ["native", "restricted", "dsl"])
def test_a_run_forks_one_session_process_ahead_not_a_pool(mode: str) -> None:
    # A run holds one session: more members, spawned sessions and workdirs made ahead would
    # only compete with it for the CPU.
    policy = replace(
        load_policy("default"), backends=BackendsConfig(allowed=("native", "restricted", "dsl"))
    )
    backend = _warm_backend(policy, mode)
    assert backend is not None
    assert isinstance(backend, NativeBackend | RestrictedBackend | DslBackend)
    native = backend if isinstance(backend, NativeBackend) else backend._native_backend()
    assert native.pool_size == 1
    backend.close()


def test_without_a_mode_the_policys_default_is_warmed() -> None:
    policy = replace(
        load_policy("default"),
        backends=BackendsConfig(allowed=("native", "restricted"), default="restricted"),
    )
    backend = _warm_backend(policy, None)
    assert isinstance(backend, RestrictedBackend)
    backend.close()


_PROBE = """
import sys
import safeexec.cli.run as run_module
loaded = []
warm = run_module._warm_backend
def spy(*args, **kwargs):
    backend = warm(*args, **kwargs)
    loaded.extend(m for m in sys.modules if m.startswith(("safeexec.", "importlib.resources")))
    return backend
run_module._warm_backend = spy
from safeexec.cli.app import app
out, sys.stdout = sys.stdout, sys.stderr
try:
    app(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
out.write(" ".join([str(code), *loaded]))
"""


def test_a_run_starts_its_template_before_it_loads_the_gate_or_the_tools(tmp_path: Path) -> None:
    # The template boots while the host imports the rest: what loads before it is on the path.
    (tmp_path / "t.py").write_text("print(6 * 7)\n", encoding="utf-8")
    argv = ["run", "--mode", "native", "--state-dir", str(tmp_path / "state"), "t.py"]
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    code, *loaded = done.stdout.split()
    assert code == "0", done.stderr
    assert "safeexec.backends.native.template" in loaded
    early = (
        "safeexec.session.session",
        "safeexec.gate",
        "safeexec.analysis",
        "safeexec.capabilities.gateway",
    )
    assert not {m for m in loaded if m.startswith((*early, "safeexec.capabilities.specs"))}
    assert "importlib.resources" not in loaded  # the shipped packs are found without it


_LAUNCH_PROBE = """
import sys
import safeexec.backends.native.template as template_module
loaded = []
launch = template_module.TemplateProcess.__init__
def spy(self, **kwargs):
    loaded.extend(m for m in sys.modules if m.startswith("safeexec."))
    launch(self, **kwargs)
template_module.TemplateProcess.__init__ = spy
from safeexec.cli.app import app
out, sys.stdout = sys.stdout, sys.stderr
try:
    app(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
out.write(" ".join([str(code), *loaded]))
"""


def test_a_run_starts_its_template_process_before_it_loads_the_policy(tmp_path: Path) -> None:
    # What loads before the template process starts is on a one-shot run's path.
    (tmp_path / "t.py").write_text("print(6 * 7)\n", encoding="utf-8")
    argv = ["run", "--state-dir", str(tmp_path / "state"), "t.py"]
    done = subprocess.run(
        [sys.executable, "-c", _LAUNCH_PROBE, *argv],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    code, *loaded = done.stdout.split()
    assert code == "0", done.stderr
    assert "safeexec.cli.run" in loaded
    late = ("safeexec.model.values", "safeexec.policy", "safeexec.backends.native.backend")
    assert not {m for m in loaded if m.startswith(late)}
