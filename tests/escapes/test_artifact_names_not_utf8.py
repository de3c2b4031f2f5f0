"""The code names a file with bytes that are not UTF-8, hoping the host chokes on the name.

File names come back from the workdir scan as surrogate-escaped ``str``; such a name in an
artifact crashed every reader that encodes it (the observation, the audit log). Only files whose
names are text are reported, by every backend (they share one workdir scan).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_a_file_name_that_is_not_utf8_never_reaches_the_host_as_an_artifact(
    sandbox: Sandbox,
) -> None:
    ran = sandbox.run(
        """
with open("bad\\udcffname.txt", "w") as handle:  # the bytes b"bad\\xffname.txt"
    handle.write("x")
with open("lone\\udced\\udca0\\udc80surrogate.txt", "w") as handle:
    handle.write("x")
with open("fine.txt", "w") as handle:
    handle.write("fine")
print("written")
"""
    )
    assert ran.result.status is ExecStatus.OK, ran.text
    names = [artifact.name for artifact in ran.result.artifacts]
    for name in names:
        name.encode("utf-8")  # raises on a surrogate-escaped name
    assert "fine.txt" in names
    json.dumps(ran.result.to_json(), ensure_ascii=False).encode("utf-8")
    sandbox.assert_usable()
