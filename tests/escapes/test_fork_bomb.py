from __future__ import annotations

from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_a_fork_bomb_is_contained(sandbox: Sandbox) -> None:
    code = """
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
"""
    ran = sandbox.run(code, wall_seconds=3.0)
    assert ran.result.status is ExecStatus.TIMEOUT
    # The interrupt keeps the interpreter when it can, never a forked process.
    assert set(sandbox.session.process_ids()) <= {sandbox.session.pid}
    assert "leftover process" in ran.result.message
    sandbox.assert_usable()


def test_the_process_limit_stops_forking(sandbox: Sandbox) -> None:
    code = """
import os, time
children = 0
try:
    for _ in range(200):
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        children += 1
except OSError as exc:
    print('stopped after', children, type(exc).__name__)
"""
    ran = sandbox.run(code, wall_seconds=5.0)
    assert ran.result.status is ExecStatus.OK, ran.text
    assert "stopped after" in ran.stdout
    assert int(ran.stdout.split()[2]) < 32
    sandbox.assert_usable()
