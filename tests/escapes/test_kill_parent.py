from __future__ import annotations

import os
from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_killing_the_parent_or_everything_hurts_nobody_outside(sandbox: Sandbox) -> None:
    victim = sandbox.canaries.victim.pid
    code = f"""
import os, signal
out = []
for target in (os.getppid(), {os.getpid()}, {os.getppid()}, {victim}, -1):
    try:
        os.kill(target, signal.SIGKILL)
        out.append((target, 'sent'))
    except OSError as exc:
        out.append((target, type(exc).__name__))
print(out)
"""
    ran = sandbox.run(code)
    # The worker is pid 1 of its own namespace: kill(0 or -1) cannot take it down either.
    assert ran.result.status is ExecStatus.OK, ran.text
    assert sandbox.canaries.victim.poll() is None
    sandbox.assert_usable()


def test_signalling_host_processes_by_their_host_pid_fails(sandbox: Sandbox) -> None:
    victim = sandbox.canaries.victim.pid
    ran = sandbox.run(f"import os, signal; os.kill({victim}, signal.SIGTERM)")
    assert ran.result.status is ExecStatus.ERROR
    assert "ProcessLookupError" in ran.result.message or "PermissionError" in ran.result.message
    sandbox.assert_usable()
