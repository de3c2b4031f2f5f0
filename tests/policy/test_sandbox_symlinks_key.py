"""``[sandbox] workdir_symlinks``: grants Landlock's ``MAKE_SYM`` back (off by default)."""

from __future__ import annotations

import pytest

from safeexec.errors import PolicyError
from safeexec.policy.loader import load_policy, parse_policy_text
from safeexec.policy.packs import shipped_packs
from safeexec.sandbox.protocol import ProtocolError, SessionConfig


def test_no_shipped_pack_grants_symlinks() -> None:
    for name in shipped_packs():
        assert load_policy(name).sandbox.workdir_symlinks is False, name


def test_the_key_loads_both_ways() -> None:
    assert parse_policy_text("[sandbox]\nworkdir_symlinks = true\n").sandbox.workdir_symlinks
    assert not parse_policy_text("[sandbox]\nworkdir_symlinks = false\n").sandbox.workdir_symlinks
    assert not parse_policy_text("[sandbox]\n").sandbox.workdir_symlinks


@pytest.mark.parametrize("value", ['"yes"', "1", "[true]"])
def test_a_value_that_is_not_a_boolean_is_refused(value: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy_text(f"[sandbox]\nworkdir_symlinks = {value}\n", file="p.toml")
    assert info.value.pointer == "/sandbox/workdir_symlinks"


def test_a_misspelt_key_gets_a_hint() -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy_text("[sandbox]\nworkdir_symlink = true\n", file="p.toml")
    assert info.value.hint is not None and "workdir_symlinks" in info.value.hint


def _config(**overrides: object) -> SessionConfig:
    fields: dict[str, object] = dict(
        workdir="/w",
        env={},
        memory_bytes=1,
        cpu_seconds=1.0,
        file_size_bytes=1,
        max_processes=1,
        max_open_files=8,
    )
    fields.update(overrides)
    return SessionConfig(**fields)  # type: ignore[arg-type]


def test_the_grant_crosses_to_the_worker_and_a_forged_value_is_refused() -> None:
    for granted in (True, False):
        message = _config(workdir_symlinks=granted).to_message()
        assert SessionConfig.from_message(message).workdir_symlinks is granted
    message = _config().to_message()
    message["workdir_symlinks"] = "true"
    with pytest.raises(ProtocolError):
        SessionConfig.from_message(message)
