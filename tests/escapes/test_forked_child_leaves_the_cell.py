"""A child forked by the cell does not ``os._exit``: it falls out of the cell into the worker loop.

The child is a copy of the worker, channel included. Returning (or raising) out of the cell, it
used to answer the host's call with its own ``done`` frame and then read the host's next
requests, racing the real worker: every later result of the session belonged to another call.
A forked child that leaves the cell must exit without touching the channel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_a_forked_child_falling_out_of_the_cell_never_answers_the_host(sandbox: Sandbox) -> None:
    ran = sandbox.run(
        """
import os, time
if os.fork() == 0:
    raise ValueError('the child raises instead of calling os._exit')
time.sleep(0.3)  # the child's answer, if any, reaches the host first
print('parent done')
"""
    )
    assert ran.result.status is ExecStatus.OK, ran.text
    assert ran.stdout == "parent done\n"
    ran = sandbox.run(
        """
import os
pid = os.fork()
if pid == 0:
    print('child falls through')
else:
    os.waitpid(pid, 0)
    print('parent waited')
"""
    )
    assert ran.result.status is ExecStatus.OK, ran.text
    assert ran.stdout.splitlines()[-1] == "parent waited"
    for number in range(3):
        ran = sandbox.run(f"print({number})")
        assert (ran.result.status, ran.stdout) == (ExecStatus.OK, f"{number}\n"), ran.text
    sandbox.assert_usable()
