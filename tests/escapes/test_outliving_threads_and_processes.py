from __future__ import annotations

import time
from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_a_thread_printing_after_the_call_does_not_hurt_the_host(sandbox: Sandbox) -> None:
    code = """
import threading, sys, time
def chatter():
    while True:
        sys.stdout.write('noise ' * 1000)
threading.Thread(target=chatter, daemon=True).start()
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK
    ran = sandbox.run("print('hello')", output_bytes=10_000)
    assert ran.result.stdout.size < 10_100
    sandbox.session.reset()  # the thread is state; reset ends it like every other state
    sandbox.assert_usable()


def test_a_background_process_burning_cpu_is_killed_while_idle(sandbox: Sandbox) -> None:
    ran = sandbox.run("import os\nif os.fork() == 0:\n    while True: pass", cpu_seconds=1.0)
    assert ran.result.status is ExecStatus.OK
    deadline = time.monotonic() + 60
    while len(sandbox.session.process_ids()) > 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    ran = sandbox.run("print('back')")
    assert ran.result.state_lost and "CPU" in ran.result.message
    sandbox.assert_usable()


def test_close_kills_every_process_the_session_started(sandbox: Sandbox) -> None:
    code = """
import os, threading, time
threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
for _ in range(3):
    if os.fork() == 0:
        time.sleep(3600)
        os._exit(0)
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK
    pids = sandbox.session.process_ids()
    assert len(pids) == 4
    sandbox.session.close()
    assert all(not _alive(pid) for pid in pids)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_cpu_used_between_calls_is_charged_to_the_next_call(sandbox: Sandbox) -> None:
    """A cell that returns at once but leaves a thread burning just under the idle budget: the
    CPU it burns between calls reaches the next result (and so the session's budget and a
    service token's quota), instead of no one's."""
    code = """
import threading, time
def burn():
    end = time.thread_time() + 0.6
    while time.thread_time() < end:
        pass
threading.Thread(target=burn, daemon=True).start()
"""
    ran = sandbox.run(code, cpu_seconds=2.0)
    assert ran.result.status is ExecStatus.OK
    done = "import threading\nprint(threading.active_count())"
    deadline = time.monotonic() + 60
    charged = 0.0
    while time.monotonic() < deadline:
        time.sleep(0.2)
        ran = sandbox.run(done, cpu_seconds=2.0)
        charged += ran.result.usage.cpu_seconds
        if ran.stdout == "1\n":
            break
    assert not ran.result.state_lost, ran.result.message
    assert charged >= 0.5, charged
