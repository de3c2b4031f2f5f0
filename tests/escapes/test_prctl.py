from __future__ import annotations

import json
from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_prctl_cannot_lift_any_layer(sandbox: Sandbox) -> None:
    code = """
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
out = {}
out['unset_no_new_privs'] = libc.prctl(38, 0, 0, 0, 0)   # PR_SET_NO_NEW_PRIVS 0
out['no_new_privs'] = libc.prctl(39, 0, 0, 0, 0)         # PR_GET_NO_NEW_PRIVS
out['seccomp_mode'] = libc.prctl(21, 0, 0, 0, 0)         # PR_GET_SECCOMP
out['ambient_raise'] = libc.prctl(47, 2, 21, 0, 0)       # PR_CAP_AMBIENT_RAISE CAP_SYS_ADMIN
out['set_mm'] = libc.prctl(35, 8, 0, 0, 0)               # PR_SET_MM
out['dumpable'] = libc.prctl(4, 1, 0, 0, 0)              # PR_SET_DUMPABLE
print(json.dumps(out))
try:
    open('/etc/shadow')
    print('shadow readable')
except OSError:
    print('still confined')
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK, ran.text
    first, verdict = ran.stdout.splitlines()
    results = json.loads(first)
    assert results["unset_no_new_privs"] == -1
    assert results["no_new_privs"] == 1
    assert results["seccomp_mode"] == 2
    assert results["ambient_raise"] == -1
    assert results["set_mm"] == -1
    assert verdict == "still confined"
    sandbox.assert_usable()
