from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_deep_recursion_is_a_recursion_error(sandbox: Sandbox) -> None:
    ran = sandbox.run("def f(n):\n    return f(n + 1)\nf(0)")
    assert ran.result.status is ExecStatus.ERROR
    assert "RecursionError" in ran.result.message
    sandbox.assert_usable()


def test_unbounded_python_recursion_is_contained(sandbox: Sandbox) -> None:
    # 3.11 keeps Python frames on the heap, so this ends at the memory or CPU limit.
    code = "import sys\nsys.setrecursionlimit(10**8)\ndef f(n):\n    return f(n + 1)\nf(0)"
    ran = sandbox.run(code, wall_seconds=20.0, cpu_seconds=2.0)
    assert ran.result.status in (ExecStatus.LIMIT_EXCEEDED, ExecStatus.TIMEOUT, ExecStatus.KILLED)
    sandbox.assert_usable()


def test_blowing_the_c_stack_kills_only_the_worker(sandbox: Sandbox) -> None:
    code = """
import sys
sys.setrecursionlimit(10**8)
nested = []
for _ in range(10**6):
    nested = [nested]
import json
json.dumps(nested)
"""
    ran = sandbox.run(code, wall_seconds=20.0)
    if sys.version_info >= (3, 12):
        # 3.12 counts C recursion apart from sys.setrecursionlimit: the encoder stops itself.
        # (Hashing nested tuples still overflows there: test_deeply_nested_c_recursion.py.)
        assert ran.result.status is ExecStatus.ERROR
        assert "RecursionError" in ran.result.message
    else:
        assert ran.result.status is ExecStatus.KILLED
        assert "SIGSEGV" in ran.result.message
        assert ran.result.state_lost
    sandbox.assert_usable()
