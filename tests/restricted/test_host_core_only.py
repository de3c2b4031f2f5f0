"""In the host process the restricted runtime is its core: a ``restricted-inprocess`` cell, run
in a fresh interpreter, loads no view and none of the proof (the worker hands the executor its
views; the core never imports them)."""

from __future__ import annotations

import json
import subprocess
import sys

_CELL = """
import json, sys, tempfile
from pathlib import Path

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.restricted import InProcessRestrictedBackend
from safeexec.model.values import ExecRequest

work = Path(tempfile.mkdtemp())
imports = ("json", "math", "re", "collections", "os", "sqlite3", "threading")
session = InProcessRestrictedBackend().open(
    SessionSpec(blobs=BlobStore(work / "blobs"), workdir=work / "w", imports=imports)
)
ran = session.run(ExecRequest(action_id="a", code="import json, math, re\\nprint(json.dumps([1]))"))
refused = session.run(ExecRequest(action_id="b", code="import sqlite3"))
session.close()
print(json.dumps({
    "ran": ran.status.value,
    "refused": refused.message,
    "modules": sorted(m for m in sys.modules if m.startswith("safeexec.restricted")),
}))
"""


def test_an_in_process_cell_loads_the_core_and_no_view() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CELL], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["ran"] == "ok"
    assert "only in the confined worker" in report["refused"], report["refused"]
    assert "native" in report["refused"]
    assert "safeexec.restricted.executor" in report["modules"]
    loaded_views = [m for m in report["modules"] if m.startswith("safeexec.restricted.views")]
    loaded_proof = [m for m in report["modules"] if m.startswith("safeexec.restricted_proof")]
    assert loaded_views == [] and loaded_proof == []
