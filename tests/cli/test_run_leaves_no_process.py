"""A ``safeexec run`` killed outright (SIGKILL: no handler, no ``finally``) leaves no process
behind: its template sees the host's end of the control socket close, kills its sessions and
exits, and a session's worker is pid 1 of its own pid namespace, so its tree goes with it."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil

RUN_MAIN = "from safeexec.cli.app import main; main()"
# Bounds, not speeds: each wait ends as soon as its condition holds.
_BOUND_SECONDS = 20.0
# Far longer than the test, so that the session's code is still running when the host dies.
SLEEPS = "import time\nopen('started', 'w').write('1')\ntime.sleep(120)\n"

# A process told apart from a later one reusing its pid by its start time.
_Identity = tuple[int, float]


def _identify(process: psutil.Process) -> _Identity:
    return process.pid, process.create_time()


def _running(identity: _Identity) -> bool:
    """Is this very process still there and not a zombie (a zombie holds nothing but its pid)?"""
    pid, started = identity
    try:
        process = psutil.Process(pid)
        return process.create_time() == started and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _within_bound(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + _BOUND_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _kill(identity: _Identity) -> None:
    try:
        process = psutil.Process(identity[0])
        if process.create_time() == identity[1]:
            process.kill()
    except psutil.NoSuchProcess:
        pass


def test_a_sigkilled_run_leaves_none_of_its_processes_running(tmp_path: Path) -> None:
    script = tmp_path / "sleeps.py"
    script.write_text(SLEEPS)
    workdir = tmp_path / "work"
    workdir.mkdir()
    command = [sys.executable, "-c", RUN_MAIN, "run", "--mode", "native"]
    command += ["--workdir", str(workdir), "--state-dir", str(tmp_path / "state"), str(script)]
    log = tmp_path / "run.log"
    with log.open("wb") as sink:
        run = subprocess.Popen(command, stdout=sink, stderr=sink)
    descendants: list[_Identity] = []
    try:
        started = _within_bound(lambda: (workdir / "started").exists() or run.poll() is not None)
        assert started and run.poll() is None, f"the session never ran: {log.read_text()}"
        host = psutil.Process(run.pid)
        descendants = [_identify(child) for child in host.children(recursive=True)]
        # At least the template and the session running the code.
        assert len(descendants) >= 2, descendants
        run.kill()
        run.wait(timeout=_BOUND_SECONDS)
        assert _within_bound(lambda: not any(_running(d) for d in descendants)), [
            d for d in descendants if _running(d)
        ]
    finally:
        run.kill()
        run.wait(timeout=_BOUND_SECONDS)
        for identity in descendants:
            _kill(identity)
