from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_the_host_users_ssh_directory_is_unreadable(sandbox: Sandbox) -> None:
    host_home = os.path.expanduser("~")
    code = f"""
import json, os

found = []
for path in [{host_home!r} + '/.ssh', {host_home!r}, '/root/.ssh', '/home']:
    try:
        found.append((path, os.listdir(path)))
    except OSError as exc:
        found.append((path, type(exc).__name__))
print(json.dumps(found))
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK, ran.text
    listing = json.loads(ran.stdout)  # a list of [path, names | error]
    assert len(listing) == 4
    for path, names in listing:
        assert isinstance(names, str) or names == [], f"{path} is visible: {names}"
    sandbox.assert_usable()
