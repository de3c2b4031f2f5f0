from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.model.values import ExecRequest, ExecStatus, Limits

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_a_session_cannot_see_or_signal_another(
    sandbox: Sandbox, backend: NativeBackend, tmp_path: Path
) -> None:
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    (other_dir / "private.txt").write_text("other session's data")
    other = backend.open(
        SessionSpec(workdir=other_dir, limits=Limits(), blobs=BlobStore(tmp_path / "b2"))
    )
    try:
        other_pid = other.pid
        code = f"""
import os, signal
out = {{}}
try:
    out['read'] = open({str(other_dir / "private.txt")!r}).read()
except OSError as exc:
    out['read'] = type(exc).__name__
try:
    os.kill({other_pid}, signal.SIGKILL)
    out['kill'] = 'sent'
except OSError as exc:
    out['kill'] = type(exc).__name__
print(out)
"""
        ran = sandbox.run(code)
        assert ran.result.status is ExecStatus.OK, ran.text
        assert "other session's data" not in ran.stdout
        assert "sent" not in ran.stdout
        assert other.pid == other_pid
        assert other.run(ExecRequest(action_id="x", code="1")).status is ExecStatus.OK
    finally:
        other.close()
    sandbox.assert_usable()
