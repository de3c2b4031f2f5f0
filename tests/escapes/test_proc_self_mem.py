from __future__ import annotations

from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_writing_proc_self_mem_is_denied(sandbox: Sandbox) -> None:
    code = """
with open('/proc/self/mem', 'r+b') as fh:
    fh.seek(0x400000)
    fh.write(b'\\xcc')
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.ERROR
    assert "PermissionError" in ran.result.message
    sandbox.assert_usable()


def test_proc_is_not_readable_at_all(sandbox: Sandbox) -> None:
    ran = sandbox.run("import os; os.listdir('/proc')")
    assert ran.result.status is ExecStatus.ERROR
    sandbox.assert_usable()
