"""A session's template preloads the data-stack modules its policy allows, and no other."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeexec.backends.fake import FakeBackend, not_executed
from safeexec.backends.registry import SharedBackends
from safeexec.policy import load_policy
from safeexec.session import session as session_module
from safeexec.session.preload import DATA_STACK, data_preload
from safeexec.session.session import Session

NO_NUMPY = 'extends = "default"\n[imports]\nextend_deny = ["numpy", "numpy.*"]\n'


def _pack(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pack.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_default_pack_preloads_the_data_stack_in_modes_with_a_template() -> None:
    policy = load_policy("default")
    assert data_preload(policy, "native") == DATA_STACK
    assert data_preload(policy, "restricted") == DATA_STACK
    for mode in ("dsl", "restricted-inprocess", "fake"):
        assert data_preload(policy, mode) == ()


def test_a_module_the_policy_refuses_is_never_preloaded(tmp_path: Path) -> None:
    assert data_preload(load_policy("strict"), "native") == ()
    preload = data_preload(load_policy(_pack(tmp_path, NO_NUMPY)), "native")
    assert "numpy" not in preload and "pandas" in preload


class _Recording:
    def __init__(self) -> None:
        self.made: list[tuple[str, dict[str, object]]] = []

    def __call__(self, mode: str, **options: object) -> FakeBackend:
        self.made.append((mode, options))
        return FakeBackend(not_executed)


@pytest.mark.parametrize(
    ("pack", "expected"),
    [(None, DATA_STACK), (NO_NUMPY, tuple(m for m in DATA_STACK if m != "numpy"))],
)
def test_a_session_asks_the_shared_backends_for_its_policys_preload(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    pack: str | None,
    expected: tuple[str, ...],
) -> None:
    make = _Recording()
    monkeypatch.setattr(session_module, "shared_backends", SharedBackends(make))
    policy = "default" if pack is None else _pack(tmp_path, pack)
    with Session(policy=policy, mode="native", state_dir=tmp_path / "state") as session:
        session.run("```python\nprint(1)\n```")
    assert make.made == [("native", {"preload": tuple(sorted(expected))})]
