"""Run the native escape suite again as an unprivileged user (most users are not root).

As root, this starts one pytest subprocess as ``nobody`` (via ``setpriv``). When the interpreter
lives under a directory ``nobody`` cannot enter (pyenv under a 0700 ``/root``), it first enters a
private mount namespace where only the interpreter tree is re-exposed under that directory.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _first_private_ancestor(path: Path) -> Path | None:
    for ancestor in reversed(path.parents):
        if ancestor != Path("/") and not ancestor.stat().st_mode & stat.S_IXOTH:
            return ancestor
    return None


def test_doctor_and_the_native_escape_suite_pass_as_nobody(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("already unprivileged: this run of the suite is the non-root run")
    for tool in ("setpriv", "unshare", "mount"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} (util-linux) is needed to run the suite as another user")
    runtime = Path(sys.base_prefix).resolve()
    cover = _first_private_ancestor(runtime)
    script = ["set -e", "mount --make-rprivate /"]
    if cover is not None:
        stash = tmp_path / "runtime"
        stash.mkdir()
        script += [
            f"mount --bind '{runtime}' '{stash}'",
            f"mount -t tmpfs -o mode=755,size=1m tmpfs '{cover}'",
            f"mkdir -p '{runtime}'",
            f"mount --bind '{stash}' '{runtime}'",
        ]
    work = tmp_path / "home"
    work.mkdir()
    work.chmod(0o777)
    tmp_path.chmod(0o755)
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
    as_nobody = "setpriv --reuid=65534 --regid=65534 --clear-groups "
    doctor = [sys.executable, "-c", "from safeexec.cli.app import main; main()", "doctor"]
    script.append(as_nobody + " ".join(f"'{arg}'" for arg in doctor))
    script.append("exec " + as_nobody + " ".join(f"'{arg}'" for arg in pytest_args))
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(work),
        "TMPDIR": str(work),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    done = subprocess.run(
        ["unshare", "--mount", "sh", "-c", "\n".join(script)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "all layers active and proven" in done.stdout, done.stdout[:3000]
    assert " passed" in done.stdout and " failed" not in done.stdout
    print(done.stdout.strip().splitlines()[-1])
