from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_host_environment_is_not_visible_through_proc(sandbox: Sandbox) -> None:
    code = f"""
import os

for path in ['/proc/1/environ', '/proc/self/environ', '/proc/{os.getpid()}/environ',
             '/proc/{os.getppid()}/environ', '/proc/self/cmdline']:
    try:
        print(path, open(path, 'rb').read()[:4000])
    except OSError as exc:
        print(path, type(exc).__name__)
print(dict(os.environ))
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK, ran.text
    assert "SAFEEXEC_CANARY_SECRET" not in ran.stdout
    sandbox.assert_usable()


def test_the_sandbox_sees_only_its_scrubbed_environment(sandbox: Sandbox) -> None:
    ran = sandbox.run("import json, os; print(json.dumps(sorted(os.environ)))")
    assert ran.result.status is ExecStatus.OK, ran.text
    names = json.loads(ran.stdout)
    assert "SAFEEXEC_CANARY_SECRET" not in names
    assert set(names) <= {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "MPLBACKEND", "MPLCONFIGDIR"}
