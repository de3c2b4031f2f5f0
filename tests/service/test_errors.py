"""A run's result JSON carries what the code raised as a value (additive: null when it did not)."""

from __future__ import annotations

from pathlib import Path

from service_support import fake_server

from safeexec.backends.fake import FakeBackend, FakeReply
from safeexec.model.values import ExecError, ExecRequest, ExecStatus

ERROR = ExecError(name="ValueError", value="bad", traceback="Traceback ...\nValueError: bad\n")


def _answer(request: ExecRequest) -> FakeReply:
    if "raise" in request.code:
        return FakeReply(status=ExecStatus.ERROR, exit_code=1, error=ERROR)
    return FakeReply(stdout="ok\n")


def test_the_run_json_has_the_error_name_value_and_traceback(tmp_path: Path) -> None:
    with fake_server(tmp_path, FakeBackend(_answer)) as server, server.client() as alice:
        session_id = alice.post("/v1/sessions").json()["session_id"]
        failed = alice.post(f"/v1/sessions/{session_id}/run", json={"code": "raise ValueError"})
        fine = alice.post(f"/v1/sessions/{session_id}/run", json={"code": "print(1)"})
    assert failed.status_code == 200, failed.text
    body = failed.json()
    assert body["error"] == {"name": "ValueError", "value": "bad", "traceback": ERROR.traceback}
    assert body["outcome"]["result"]["error"] == body["error"]
    assert fine.json()["error"] is None
