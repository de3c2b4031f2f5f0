"""The cell tells the host it is done (a forged ``done`` frame) and then keeps computing.

The worker is the code's own process, so the host cannot tell a forged ``done`` from a real one:
the call returns early. What must hold is the containment: the cell, still running, is now
"idle" work, and the idle watch kills the tree once it uses more CPU than the call was allowed;
the next call says the state was lost, and why.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox

FORGE_AND_SPIN = """
import socket, struct
channel = socket.socket(fileno=3)
body = b'{"op":"done","ok":true}'
channel.sendall(struct.pack('>I', len(body)) + body)
while True:
    pass
"""


def test_a_cell_that_forges_done_is_still_killed_by_its_cpu_budget(sandbox: Sandbox) -> None:
    ran = sandbox.run(FORGE_AND_SPIN, cpu_seconds=1, wall_seconds=30)
    assert ran.result.status is ExecStatus.OK  # the host took the forged answer
    pid = sandbox.session.pid
    deadline = time.monotonic() + 30
    while sandbox.session.pid == pid and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sandbox.session.pid != pid, "the spinning cell outlived its CPU budget"
    ran = sandbox.run("print('again')")
    assert ran.result.status is ExecStatus.OK, ran.text
    assert ran.result.state_lost and "killed while idle" in ran.result.message
    sandbox.assert_usable()
