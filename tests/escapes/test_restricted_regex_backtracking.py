"""Catastrophic backtracking: one C call (``re.match``) that runs for hours and runs no Python
code a budget tick could stop. In the worker SIGKILL ends it; in-process ``re`` must run on a
time-limited engine, or the host thread hangs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.restricted import RestrictedBackend
from safeexec.model.values import ExecRequest, ExecStatus, Limits

ATTACKS = [
    "import re\nprint(re.match('(a+)+$', 'a' * 40 + 'b'))",
    "import re\np = re.compile('(a|aa)+$')\nprint(p.search('a' * 60 + 'b'))",
    "import re\nprint(re.findall('(x+x+)+y', 'x' * 40))",
    "import re\nprint(re.sub('(a*)*b', '', 'a' * 40))",
    "import re\nprint(re.fullmatch('(?:a+)+$', 'a' * 40 + '!'))",
    "import re\nprint(list(re.finditer('(a+)+b', 'a' * 40)))",
    "import re\nprint(re.split('(a+)+b', 'a' * 40))",
]

# The in-process backend runs in a child process here: on an engine without a time limit the
# child hangs, which the outer timeout turns into a failure instead of a hung test run.
_CHILD = r"""
import json, sys, tempfile
from pathlib import Path
from safeexec.backends.base import SessionSpec
from safeexec.backends.restricted import RestrictedBackend
from safeexec.audit.blobs import BlobStore
from safeexec.model.values import ExecRequest, Limits
tmp = Path(tempfile.mkdtemp())
session = RestrictedBackend(in_process=True).open(
    SessionSpec(workdir=None, limits=Limits(), blobs=BlobStore(tmp / "blobs"), imports=("re",))
)
out = []
for code in json.loads(sys.argv[1]):
    result = session.run(ExecRequest(
        action_id="a", code=code, limits=Limits(cpu_seconds=1.0, wall_seconds=2.0)))
    out.append([result.status.value, result.message])
after = session.run(ExecRequest(action_id="b", code="import re\nprint(re.sub('b', 'c', 'abc'))"))
out.append([after.status.value, session.blobs.get(after.stdout).decode()])
session.close()
print(json.dumps(out))
"""


def test_backtracking_is_stopped_in_process() -> None:
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, json.dumps(ATTACKS)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("a backtracking regular expression hung the in-process host")
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout)
    # Each ends within its limits: finished (the engine needed no backtracking) or timed out.
    for code, (status, message) in zip(ATTACKS, results, strict=False):
        assert status in ("ok", "timeout"), (code, status, message)
        if status == "timeout":
            assert "timeout" in message, (code, message)
    assert results[1][0] == "timeout", results[1]  # (a|aa)+$ backtracks on any engine
    assert results[-1] == ["ok", "acc\n"]


@pytest.mark.parametrize("attack", ATTACKS[:2])
def test_backtracking_is_stopped_in_the_worker(
    worker_restricted_backend: RestrictedBackend, tmp_path: Path, attack: str
) -> None:
    blobs = BlobStore(tmp_path / "blobs")
    (tmp_path / "work").mkdir()
    session = worker_restricted_backend.open(
        SessionSpec(workdir=tmp_path / "work", limits=Limits(), blobs=blobs, imports=("re",))
    )
    try:
        result = session.run(
            ExecRequest(action_id="a", code=attack, limits=Limits(cpu_seconds=1, wall_seconds=2))
        )
        assert result.status in (ExecStatus.TIMEOUT, ExecStatus.KILLED), result.message
        after = session.run(ExecRequest(action_id="b", code="print(6 * 7)"))
        assert blobs.get(after.stdout) == b"42\n"
    finally:
        session.close()
