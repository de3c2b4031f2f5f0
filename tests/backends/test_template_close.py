"""Closing the template waits on its pidfd, whatever descriptor number the host has reached."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from safeexec.backends.native.template import _exits_within


def test_a_pidfd_above_fd_setsize_is_waited_on() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"RLIMIT_NOFILE hard limit {hard} leaves no room above FD_SETSIZE")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    held = []
    try:
        while not held or held[-1] < 1100:  # the next descriptor (the pidfd) is past 1024
            held.append(os.open(os.devnull, os.O_RDONLY))
        process = subprocess.Popen([sys.executable, "-c", "pass"])
        assert _exits_within(process, seconds=30)
        assert process.wait() == 0
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        assert not _exits_within(sleeper, seconds=0.05)
        sleeper.kill()
        sleeper.wait()
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
