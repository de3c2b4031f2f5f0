from __future__ import annotations

from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_printing_a_gigabyte_is_capped_while_it_is_read(sandbox: Sandbox) -> None:
    code = """
import sys
chunk = 'x' * (1 << 20)
for _ in range(1024):
    sys.stdout.write(chunk)
"""
    ran = sandbox.run(code, wall_seconds=60.0, output_bytes=4096)
    assert ran.result.status is ExecStatus.OK, ran.result.message
    assert ran.result.truncated
    assert ran.result.usage.output_bytes >= 1 << 30
    assert ran.result.stdout.size < 4096 + 100
    assert "bytes omitted" in ran.stdout
    sandbox.assert_usable()


def test_output_from_c_level_writes_and_subprocesses_is_captured_and_capped(
    sandbox: Sandbox,
) -> None:
    code = """
import os
os.write(1, b'A' * 100000)
_ = os.write(2, b'from stderr')
"""
    ran = sandbox.run(code, output_bytes=1000)
    assert ran.result.truncated
    assert ran.stdout.startswith("A" * 400) and ran.stdout.endswith("A" * 400)
    assert ran.stderr == "from stderr"
