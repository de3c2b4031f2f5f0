"""Request shapes and limits: 413 over the body limit, 422 on unknown fields, 400 on what the
server does not offer, no CORS, limits only narrow, and a crashing backend is a 500 that leaves
the server serving; a blocked run never blocks the event loop."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from service_support import fake_server

from safeexec.backends.fake import FakeBackend, FakeReply
from safeexec.model.values import ExecRequest

_MiB = 1024 * 1024
_HELD_SECONDS = 30.0


def _answer(request: ExecRequest) -> FakeReply:
    return FakeReply(stdout=f"wall={request.limits.wall_seconds}\n")


def test_a_10_mib_body_over_the_limit_is_a_413_with_or_without_a_length(tmp_path: Path) -> None:
    with (
        fake_server(tmp_path, FakeBackend(_answer), max_body_bytes=4 * _MiB) as server,
        server.client() as alice,
    ):
        session_id = alice.post("/v1/sessions").json()["session_id"]
        big = b"x" * (10 * _MiB)
        declared = alice.put(f"/v1/sessions/{session_id}/files/big.bin", content=big)
        assert declared.status_code == 413
        assert declared.json()["error"] == "request_too_large"

        def chunks() -> Iterator[bytes]:
            for _ in range(10):
                yield b"y" * _MiB

        chunked = alice.put(f"/v1/sessions/{session_id}/files/big.bin", content=chunks())
        assert chunked.status_code == 413
        as_json = alice.post(
            f"/v1/sessions/{session_id}/run", json={"code": "#" + "z" * (10 * _MiB)}
        )
        assert as_json.status_code == 413
        # Nothing was written, and the server still serves the session.
        assert alice.get(f"/v1/sessions/{session_id}/files").json() == []
        fits = alice.put(f"/v1/sessions/{session_id}/files/ok.bin", content=b"x" * _MiB)
        assert fits.status_code == 204
        assert alice.get(f"/v1/sessions/{session_id}/files/ok.bin").content == b"x" * _MiB


def test_no_cors_headers_are_ever_sent(tmp_path: Path) -> None:
    origin = {"Origin": "https://evil.example"}
    with fake_server(tmp_path, FakeBackend(_answer)) as server, server.client() as alice:
        preflight = alice.options(
            "/v1/sessions",
            headers={**origin, "Access-Control-Request-Method": "POST"},
        )
        created = alice.post("/v1/sessions", headers=origin)
        health = alice.get("/v1/health", headers=origin)
    assert preflight.status_code == 405
    for response in (preflight, created, health):
        assert not [h for h in response.headers if h.lower().startswith("access-control-")]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/sessions", {"polcy": "default"}),
        ("/v1/sessions", {"limits": {"wall_secs": 1}}),
        ("/v1/sessions", {"limits": {"wall_seconds": -1}}),
        ("/v1/check", {"code": "x", "extra": True}),
    ],
)
def test_a_misspelt_or_bad_field_is_a_422(tmp_path: Path, path: str, body: object) -> None:
    with fake_server(tmp_path, FakeBackend(_answer)) as server, server.client() as alice:
        assert alice.post(path, json=body).status_code == 422


@pytest.mark.parametrize(
    "body",
    [
        {"policy": "strict"},  # a real pack, but not one this server offers
        {"policy": "/etc/passwd"},  # a client never names a path for the server to read
        {"mode": "native"},  # not a mode this server offers
    ],
)
def test_what_the_server_does_not_offer_is_a_400(tmp_path: Path, body: object) -> None:
    with fake_server(tmp_path, FakeBackend(_answer)) as server, server.client() as alice:
        refused = alice.post("/v1/sessions", json=body)
        assert refused.status_code == 400
        assert "not offered here" in refused.json()["message"]
        assert alice.get("/v1/sessions").json() == []


def test_run_needs_exactly_one_of_code_and_reply(tmp_path: Path) -> None:
    with fake_server(tmp_path, FakeBackend(_answer)) as server, server.client() as alice:
        session_id = alice.post("/v1/sessions").json()["session_id"]
        for body in ({}, {"code": "x", "reply": "```python\nx\n```"}):
            assert alice.post(f"/v1/sessions/{session_id}/run", json=body).status_code == 400
        reply = alice.post(
            f"/v1/sessions/{session_id}/run", json={"reply": "Here:\n```python\nx = 1\n```\n"}
        )
        assert reply.json()["outcome"]["action"]["source"] == "fenced"


def test_limits_and_timeouts_narrow_the_policy_never_widen_it(tmp_path: Path) -> None:
    with fake_server(tmp_path, FakeBackend(_answer)) as server, server.client() as alice:
        wide = alice.post("/v1/sessions", json={"limits": {"wall_seconds": 9999}}).json()
        narrow = alice.post("/v1/sessions", json={"limits": {"wall_seconds": 2.5}}).json()
        assert wide["limits"]["wall_seconds"] == 30.0  # the pack's
        assert narrow["limits"]["wall_seconds"] == 2.5
        assert narrow["policy_digest"] != wide["policy_digest"]
        sid = narrow["session_id"]
        ran = alice.post(f"/v1/sessions/{sid}/run", json={"code": "x", "timeout": 1}).json()
        assert ran["observation"]["text"].endswith("wall=1.0")
        ran = alice.post(f"/v1/sessions/{sid}/run", json={"code": "x", "timeout": 60}).json()
        assert ran["observation"]["text"].endswith("wall=2.5")


def test_a_denied_step_is_a_200_with_the_findings_and_nothing_runs(tmp_path: Path) -> None:
    backend = FakeBackend(_answer)
    with fake_server(tmp_path, backend) as server, server.client() as alice:
        session_id = alice.post("/v1/sessions").json()["session_id"]
        denied = alice.post(f"/v1/sessions/{session_id}/run", json={"code": "import subprocess"})
        checked = alice.post("/v1/check", json={"code": "import subprocess"})
    assert denied.status_code == 200
    assert denied.json()["verdict"] == "deny" and denied.json()["status"] is None
    assert "SX201" in [f["rule"] for f in denied.json()["findings"]]
    assert checked.json()["verdict"] == "deny"
    assert [f["rule"] for f in checked.json()["findings"]] == [
        f["rule"] for f in denied.json()["findings"]
    ]
    assert backend.calls == []


def test_a_crashing_backend_is_a_500_with_a_clear_body_and_the_server_keeps_serving(
    tmp_path: Path,
) -> None:
    crashes = iter([True, False])

    def flaky(request: ExecRequest) -> FakeReply:
        if next(crashes):
            raise RuntimeError("worker protocol bug")
        return FakeReply(stdout="fine\n")

    with fake_server(tmp_path, FakeBackend(flaky)) as server, server.client() as alice:
        session_id = alice.post("/v1/sessions").json()["session_id"]
        crashed = alice.post(f"/v1/sessions/{session_id}/run", json={"code": "x = 1"})
        assert crashed.status_code == 500
        assert crashed.json()["error"] == "internal_error"
        assert "worker protocol bug" in crashed.json()["message"]
        assert alice.get("/v1/health").status_code == 200
        again = alice.post(f"/v1/sessions/{session_id}/run", json={"code": "x = 1"})
        assert again.status_code == 200 and again.json()["status"] == "ok"
        assert alice.get(f"/v1/sessions/{session_id}").json()["steps"] == 1


def test_a_blocked_run_does_not_block_the_event_loop(tmp_path: Path) -> None:
    entered, release = threading.Event(), threading.Event()

    def blocking(request: ExecRequest) -> FakeReply:
        entered.set()
        release.wait(_HELD_SECONDS)
        return FakeReply(stdout="late\n")

    with fake_server(tmp_path, FakeBackend(blocking)) as server, server.client() as alice:
        session_id = alice.post("/v1/sessions").json()["session_id"]
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(alice.post, f"/v1/sessions/{session_id}/run", json={"code": "x"})
            assert entered.wait(_HELD_SECONDS)
            # The run holds a worker thread; the loop still answers everything else.
            with httpx.Client(base_url=server.base_url, timeout=5.0) as other:
                assert other.get("/v1/health").status_code == 200
            assert alice.post("/v1/sessions").status_code == 201
            assert alice.post("/v1/check", json={"code": "x = 1"}).json()["verdict"] == "allow"
            assert alice.post(f"/v1/sessions/{session_id}/interrupt").json() == {"running": True}
            assert not running.done()
            release.set()
            assert running.result().json()["observation"]["text"].endswith("late")


def test_file_names_outside_the_workdir_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("host secret")
    with fake_server(tmp_path, FakeBackend(_answer)) as server, server.client() as alice:
        session_id = alice.post("/v1/sessions").json()["session_id"]
        base = f"/v1/sessions/{session_id}/files"
        for name in ("%2E%2E%2Fescape.txt", "%2Fetc%2Fpasswd", "a%2F..%2F..%2Fx"):
            assert alice.put(f"{base}/{name}", content=b"x").status_code == 400
        for name in ("%2E%2E%2F%2E%2E%2Foutside.txt", "%2Fetc%2Fpasswd"):
            assert alice.get(f"{base}/{name}").status_code == 404
        assert alice.get(base, params={"path": "../.."}).status_code == 400
    assert outside.read_text() == "host secret"
