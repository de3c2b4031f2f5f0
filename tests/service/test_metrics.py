"""``GET /v1/metrics``: Prometheus text, authenticated, counting what the server did."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families
from service_support import ALICE, fake_server, token_store

from safeexec.backends.fake import FakeBackend, FakeReply
from safeexec.model.values import ExecRequest
from safeexec.service.quotas import Quota


def _answer(request: ExecRequest) -> FakeReply:
    return FakeReply(stdout="ran\n")


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_metrics_need_a_token(tmp_path: Path) -> None:
    with fake_server(tmp_path, FakeBackend(_answer)) as server, server.client(None) as anonymous:
        response = anonymous.get("/v1/metrics")
        assert response.status_code == 401
        assert "safeexec" not in response.text


def test_metrics_count_sessions_runs_refusals_and_run_latency(tmp_path: Path) -> None:
    tokens = token_store(Quota(max_sessions=1))
    with (
        fake_server(tmp_path, FakeBackend(_answer), tokens=tokens) as server,
        server.client(ALICE) as alice,
        server.client(None) as anonymous,
    ):
        session_id = alice.post("/v1/sessions").json()["session_id"]
        assert alice.post(f"/v1/sessions/{session_id}/run", json={"code": "x = 1"}).is_success
        denied = alice.post(f"/v1/sessions/{session_id}/run", json={"code": "import ctypes"})
        assert denied.json()["verdict"] == "deny"
        assert alice.post("/v1/sessions").status_code == 429  # max_sessions = 1
        assert anonymous.get("/v1/sessions").status_code == 401
        response = alice.get("/v1/metrics")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/plain")
        got = _samples(response.text)
    assert got[("safeexec_sessions_open", ())] == 1
    assert got[("safeexec_sessions_created_total", ())] == 1
    assert got[("safeexec_runs_total", (("status", "ok"), ("verdict", "allow")))] == 1
    assert got[("safeexec_runs_total", (("status", "none"), ("verdict", "deny")))] == 1
    assert got[("safeexec_refusals_total", (("error", "quota_sessions"),))] == 1
    assert got[("safeexec_refusals_total", (("error", "unauthorized"),))] == 1
    assert got[("safeexec_run_duration_seconds_count", ())] == 2
    assert ("safeexec_run_duration_seconds_bucket", (("le", "+Inf"),)) in got
    assert ALICE not in response.text and session_id not in response.text
