"""Run the native escape suite again as an unprivileged user (most users are not root).

As root, this starts one pytest subprocess as ``nobody`` (via ``setpriv``). When the interpreter
lives under a directory ``nobody`` cannot enter (pyenv under a 0700 ``/root``), it first enters a
private mount namespace where only the interpreter tree is re-exposed under that directory.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from escape_support import run_as_nobody

ROOT = Path(__file__).resolve().parents[2]


def test_doctor_and_the_native_escape_suite_pass_as_nobody(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("already unprivileged: this run of the suite is the non-root run")
    pytest_args = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-x",
        "-p",
        "no:cacheprovider",
        "-k",
        "native and not test_as_non_root",
        str(ROOT / "tests" / "escapes"),
    ]
    doctor = [sys.executable, "-c", "from safeexec.cli.app import main; main()", "doctor"]
    done = run_as_nobody([doctor, pytest_args], tmp_path, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    # As nobody some layers cannot be had (own uid, cgroups, the workdir mount): doctor names the
    # rung and the missing layers, never "all layers active", and the default pack is met.
    assert "rung: unprivileged" in done.stdout, done.stdout[:3000]
    assert "all layers active and proven" not in done.stdout, done.stdout[:3000]
    assert "requirements met" in done.stdout, done.stdout[:3000]
    assert " passed" in done.stdout and " failed" not in done.stdout
    print(done.stdout.strip().splitlines()[-1])
