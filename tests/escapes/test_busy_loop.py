from __future__ import annotations

from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_an_endless_loop_dies_at_the_wall_limit(sandbox: Sandbox) -> None:
    ran = sandbox.run("while True: pass", wall_seconds=1.0, cpu_seconds=30.0)
    assert ran.result.status is ExecStatus.TIMEOUT
    assert "wall timeout" in ran.result.message
    assert any(e.kind == "limit_hit" and e.limit == "wall_seconds" for e in ran.result.events)
    sandbox.assert_usable()


def test_an_endless_loop_dies_at_the_cpu_limit(sandbox: Sandbox) -> None:
    ran = sandbox.run("while True: pass", wall_seconds=30.0, cpu_seconds=0.5)
    assert ran.result.status is ExecStatus.TIMEOUT
    assert "cpu timeout" in ran.result.message
    sandbox.assert_usable()


def test_catching_every_exception_does_not_stop_the_kill(sandbox: Sandbox) -> None:
    code = """
while True:
    try:
        while True:
            pass
    except BaseException:
        pass
"""
    ran = sandbox.run(code, wall_seconds=1.0)
    assert ran.result.status is ExecStatus.TIMEOUT
    sandbox.assert_usable()


def test_cpu_burnt_in_child_processes_counts(sandbox: Sandbox) -> None:
    code = """
import os
for _ in range(2):
    if os.fork() == 0:
        while True:
            pass
os.wait()
"""
    ran = sandbox.run(code, wall_seconds=30.0, cpu_seconds=1.0)
    assert ran.result.status is ExecStatus.TIMEOUT
    assert "cpu timeout" in ran.result.message
    sandbox.assert_usable()
