from __future__ import annotations

from typing import TYPE_CHECKING

from test_outliving_threads_and_processes import _alive

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


DAEMON = """
import os, signal, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        time.sleep(3600)
    os._exit(0)
os.wait()
"""


def test_a_daemonised_grandchild_dies_with_the_session(sandbox: Sandbox) -> None:
    ran = sandbox.run(DAEMON)
    assert ran.result.status is ExecStatus.OK, ran.text
    pids = sandbox.session.process_ids()
    assert len(pids) == 2  # the worker and the daemon, re-parented inside the session
    sandbox.session.close()
    assert not any(_alive(pid) for pid in pids)


def test_a_daemonised_grandchild_dies_on_timeout(sandbox: Sandbox) -> None:
    ran = sandbox.run(DAEMON + "\nwhile True: pass", wall_seconds=1.0)
    assert ran.result.status is ExecStatus.TIMEOUT
    # Only the interpreter may outlive the timeout (its interrupt keeps the state).
    assert set(sandbox.session.process_ids()) <= {sandbox.session.pid}
    assert ran.result.message.endswith("killed 1 leftover process")
    sandbox.assert_usable()
