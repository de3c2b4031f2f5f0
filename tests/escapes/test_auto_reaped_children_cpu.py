"""CPU burnt by children the kernel reaps itself (``SIGCHLD`` ignored) must still be metered.

An exited, auto-reaped child's CPU is added to no ``/proc/<pid>/stat`` anywhere, so a meter
that sums live processes sees almost nothing: a call burnt 4 CPU-seconds against a 2 s limit,
an idle session 21 CPU-seconds in 12 s. The session's cgroup counts every process that ever
ran in it. Burners here are bounded (a few CPU-seconds in total), so a blind meter lets them
finish instead of running on.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus
from safeexec.sandbox.layers import Layer

if TYPE_CHECKING:
    from escape_support import Sandbox

# Each child burns ~0.1 CPU-seconds and exits unreaped; ROUNDS of them in sequence.
BURNERS = """
import os, signal, time
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
for _ in range({rounds}):
    if os.fork() == 0:
        burn(0.1)
        os._exit(0)
    try:
        os.waitpid(-1, 0)  # with SIGCHLD ignored: blocks until the child is gone, then ECHILD
    except ChildProcessError:
        pass
print("finished", flush=True)
"""


def test_auto_reaped_children_count_against_the_cpu_limit(sandbox: Sandbox) -> None:
    sandbox.needs(Layer.CGROUP_CPU)
    ran = sandbox.run(BURNERS.format(rounds=40), cpu_seconds=1.0, wall_seconds=30.0)
    assert ran.result.status is ExecStatus.TIMEOUT, ran.text
    assert "cpu timeout" in ran.result.message
    assert "finished" not in ran.stdout
    sandbox.assert_usable()


def test_auto_reaped_children_count_against_the_idle_budget(sandbox: Sandbox) -> None:
    sandbox.needs(Layer.CGROUP_CPU)
    background = (
        "import os\nif os.fork() == 0:\n    os.setsid()\n"
        + "\n".join("    " + line for line in BURNERS.format(rounds=60).splitlines())
        + "\n    os._exit(0)\n"
    )
    ran = sandbox.run(background, cpu_seconds=1.0)
    assert ran.result.status is ExecStatus.OK, ran.text
    deadline = time.monotonic() + 30
    while sandbox.session.process_ids() and time.monotonic() < deadline:
        time.sleep(0.1)
    after = sandbox.run("print('back')")
    assert after.result.state_lost, after.text
    assert "background processes used more than" in after.result.message
    sandbox.assert_usable()
