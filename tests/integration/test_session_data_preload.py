"""``Session()`` on the default route: the data stack the policy allows is loaded in the worker
before its first cell, and a policy that refuses it gets a template without it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from safeexec.backends.base import Backend
from safeexec.backends.native import NativeBackend, NativeSession
from safeexec.backends.registry import SharedBackends, default_backend
from safeexec.session import session as session_module
from safeexec.session.preload import DATA_STACK
from safeexec.session.session import Session

NO_DATA_STACK = (
    'extends = "default"\n[imports]\nextend_deny = '
    '["numpy", "numpy.*", "pandas", "pandas.*", "matplotlib", "matplotlib.*"]\n'
)
NUMPY_CORE = "_multiarray_umath"  # the shared object numpy's import maps


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Backend]]:
    backends: list[Backend] = []

    def make(mode: str, **options: Any) -> Backend:
        backends.append(default_backend(mode, **options))
        return backends[-1]

    shared = SharedBackends(make, pool_size=1)
    monkeypatch.setattr(session_module, "shared_backends", shared)
    yield backends
    assert shared.close() == []


def _worker_maps_after_a_first_cell(policy: str | Path, state: Path) -> str:
    """The worker's memory map after a first cell that imports nothing, seen from the host."""
    with Session(policy=policy, mode="native", state_dir=state) as session:
        outcome = session.run("```python\nprint(6 * 7)\n```\n")
        assert outcome.result is not None, outcome.observation.text
        worker = session._pool.for_files("native")
        assert isinstance(worker, NativeSession) and worker.pid is not None
        with open(f"/proc/{worker.pid}/maps") as fh:
            return fh.read()


def test_the_default_pack_has_the_data_stack_loaded_before_its_first_cell(
    made: list[Backend], tmp_path: Path
) -> None:
    assert NUMPY_CORE in _worker_maps_after_a_first_cell("default", tmp_path / "state")
    (backend,) = made
    assert isinstance(backend, NativeBackend)
    assert backend.statistics().preloaded == tuple(sorted(DATA_STACK))


def test_a_pack_that_refuses_the_data_stack_gets_a_template_without_it(
    made: list[Backend], tmp_path: Path
) -> None:
    pack = tmp_path / "no-data.toml"
    pack.write_text(NO_DATA_STACK, encoding="utf-8")
    assert NUMPY_CORE not in _worker_maps_after_a_first_cell(pack, tmp_path / "state")
    (backend,) = made
    assert isinstance(backend, NativeBackend) and backend.statistics().preloaded == ()
    with Session(policy=pack, mode="native", state_dir=tmp_path / "state") as session:
        refused = session.run("```python\nimport numpy\n```\n")
    assert refused.result is None
    assert "SX201" in [finding.rule for finding in refused.decision.findings]


@pytest.mark.parametrize(
    ("code", "rule"),
    [
        ("import subprocess\n", "SX201"),
        # The preloaded modules sit in the module table before the cell: still out of reach.
        ("import sys\nnp = sys.modules['numpy']\n", "SX310"),
    ],
)
def test_a_preloaded_session_still_refuses_what_the_policy_refuses(
    made: list[Backend], tmp_path: Path, code: str, rule: str
) -> None:
    with Session(policy="default", mode="native", state_dir=tmp_path / "state") as session:
        warm = session.run("```python\nimport numpy as np\nprint(np.arange(4).sum())\n```\n")
        assert warm.result is not None and warm.observation.text.strip().endswith("6")
        refused = session.run(f"```python\n{code}```\n")
    assert refused.result is None
    assert rule in [finding.rule for finding in refused.decision.findings]
    (backend,) = made
    assert isinstance(backend, NativeBackend) and "numpy" in backend.statistics().preloaded
