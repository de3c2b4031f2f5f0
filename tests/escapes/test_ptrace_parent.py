from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


@pytest.mark.parametrize("request_code", [16, 0])  # PTRACE_ATTACH to the parent, PTRACE_TRACEME
def test_ptrace_kills_the_worker_by_seccomp(sandbox: Sandbox, request_code: int) -> None:
    code = f"import ctypes, os; ctypes.CDLL(None).ptrace({request_code}, os.getppid(), 0, 0)"
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.KILLED
    assert "SIGSYS" in ran.result.message
    sandbox.assert_usable()
