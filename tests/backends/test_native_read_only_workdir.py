"""A read-only workdir is the caller's mistake: ``ConfigurationError``, not a crashed backend."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from safeexec.audit.log import read_log
from safeexec.errors import ConfigurationError
from safeexec.model.values import Verdict
from safeexec.session.session import Session


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    target = tmp_path / "ro"
    target.mkdir()
    if os.geteuid() != 0:
        target.chmod(0o555)  # not writable by this user
        yield target
        target.chmod(0o755)
        return
    # As root every mode bit is writable: only a read-only mount says no.
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(target)])
    if done.returncode != 0:
        pytest.skip("cannot mount a read-only tmpfs here")
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False)


def test_a_read_only_workdir_is_a_configuration_error_and_the_step_is_denied(
    read_only_dir: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    session = Session(policy="default", mode="native", workdir=read_only_dir, state_dir=state)
    with session, pytest.raises(ConfigurationError, match="is read-only"):
        session.run("```python\nprint(1)\n```\n")
    (event,) = read_log(state)
    assert event.verdict is Verdict.DENY
    assert [finding.rule for finding in event.findings] == ["SX901"]  # unavailable, not crashed


def test_a_writable_workdir_is_not_mistaken_for_a_read_only_one(tmp_path: Path) -> None:
    workdir = tmp_path / "rw"
    workdir.mkdir()
    with Session(
        policy="default", mode="native", workdir=workdir, state_dir=tmp_path / "state"
    ) as session:
        outcome = session.run("```python\nprint(1)\n```\n")
    assert outcome.result is not None
