from __future__ import annotations

from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_reading_etc_shadow_is_denied(sandbox: Sandbox) -> None:
    ran = sandbox.run("open('/etc/shadow').read()")
    assert ran.result.status is ExecStatus.ERROR
    assert "PermissionError" in ran.result.message or "FileNotFoundError" in ran.result.message
    sandbox.assert_usable()


def test_reading_etc_passwd_is_denied_too(sandbox: Sandbox) -> None:
    ran = sandbox.run("print(open('/etc/passwd').read())")
    assert ran.result.status is ExecStatus.ERROR
    assert "root:" not in ran.stdout
