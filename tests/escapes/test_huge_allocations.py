from __future__ import annotations

from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_a_ten_billion_element_list_hits_the_memory_limit(sandbox: Sandbox) -> None:
    ran = sandbox.run("x = [0] * 10**10")
    assert ran.result.status is ExecStatus.LIMIT_EXCEEDED
    assert "MemoryError" in ran.result.message
    sandbox.assert_usable()


def test_a_hundred_gigabyte_string_hits_the_memory_limit(sandbox: Sandbox) -> None:
    ran = sandbox.run("x = 'a' * 10**11")
    assert ran.result.status is ExecStatus.LIMIT_EXCEEDED
    sandbox.assert_usable()


def test_growing_memory_slowly_hits_the_memory_limit(sandbox: Sandbox) -> None:
    ran = sandbox.run("chunks = []\nwhile True:\n    chunks.append(bytearray(10**7))")
    assert ran.result.status is ExecStatus.LIMIT_EXCEEDED
    sandbox.run("del chunks")
    sandbox.assert_usable()
