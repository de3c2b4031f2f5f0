from __future__ import annotations

from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_ignoring_sigterm_does_not_survive_a_timeout(sandbox: Sandbox) -> None:
    code = """
import signal
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU):
    signal.signal(sig, signal.SIG_IGN)
while True:
    pass
"""
    ran = sandbox.run(code, wall_seconds=1.0)
    assert ran.result.status is ExecStatus.TIMEOUT
    sandbox.assert_usable()
