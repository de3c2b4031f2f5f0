"""The memory and unnamed-file cells again as an unprivileged user, on the rung without a
memory cgroup and without a workdir mount: there seccomp refuses unmapped shared memory and
what could hide a file, and the host counts files without a name against the disk budget.

As root this starts one pytest subprocess as ``nobody`` over just those two modules (the full
non-root run of the suite is ``test_as_non_root``), and checks which mechanism stopped each cell.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from escape_support import run_as_nobody

ROOT = Path(__file__).resolve().parents[2]
MODULES = ("test_memory_outside_the_address_space.py", "test_unnamed_files_fill_disk.py")


def test_memory_and_unnamed_file_cells_are_stopped_as_nobody(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("already unprivileged: the two modules themselves are the non-root run")
    pytest_args = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider"]
    pytest_args += ["-k", "native", *(str(ROOT / "tests" / "escapes" / m) for m in MODULES)]
    done = run_as_nobody([pytest_args], tmp_path, cwd=ROOT, timeout=600)
    out = done.stdout
    assert done.returncode == 0, out[-6000:] + done.stderr[-3000:]
    assert " passed" in out and " failed" not in out and "xfail" not in out, out[-3000:]
    # No memory cgroup here: seccomp refuses, every time; no mount: the host counts.
    assert "stopped by the memory cgroup" not in out, out[-3000:]
    assert out.count("memfds: stopped by seccomp") == 1, out[-3000:]
    assert out.count("System V segments: stopped by seccomp") == 1, out[-3000:]
    assert "stopped by the workdir's tmpfs" not in out, out[-3000:]
    assert "unnamed files: stopped by the counted disk budget" in out, out[-3000:]
    print(out.strip().splitlines()[-1])
