"""Ownership and quotas: another token's session is a 404 like a missing one; over quota, 429."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from service_support import ALICE, BOB, fake_server, token_store

from safeexec.backends.fake import FakeBackend, FakeReply
from safeexec.model.values import ExecRequest, Usage
from safeexec.service.quotas import Quota

_HELD_SECONDS = 30.0  # an outer bound only: each test releases the gate itself


class Gate:
    """A fake handler whose runs wait until the test opens the gate."""

    def __init__(self) -> None:
        self.entered = threading.Semaphore(0)
        self.opened = threading.Event()

    def __call__(self, request: ExecRequest) -> FakeReply:
        self.entered.release()
        self.opened.wait(_HELD_SECONDS)
        return FakeReply(stdout="done\n")


def _answer(request: ExecRequest) -> FakeReply:
    return FakeReply(stdout="ran\n", usage=Usage(cpu_seconds=0.75))


def test_another_tokens_session_is_a_404_indistinguishable_from_a_missing_one(
    tmp_path: Path,
) -> None:
    with (
        fake_server(tmp_path, FakeBackend(_answer)) as server,
        server.client(ALICE) as alice,
        server.client(BOB) as bob,
    ):
        mine = alice.post("/v1/sessions").json()["session_id"]
        assert alice.post(f"/v1/sessions/{mine}/run", json={"code": "x = 1"}).is_success
        stdout = alice.post(f"/v1/sessions/{mine}/run", json={"code": "x"}).json()
        blob = stdout["outcome"]["result"]["stdout"]["sha256"]
        assert alice.put(f"/v1/sessions/{mine}/files/a.txt", content=b"secret").is_success
        missing = f"{mine[:-4]}ffff" if not mine.endswith("ffff") else f"{mine[:-4]}0000"
        calls = [
            ("GET", "/v1/sessions/{}", None),
            ("POST", "/v1/sessions/{}/run", {"code": "print(x)"}),
            ("POST", "/v1/sessions/{}/interrupt", None),
            ("GET", "/v1/sessions/{}/files", None),
            ("GET", "/v1/sessions/{}/files/a.txt", None),
            ("PUT", "/v1/sessions/{}/files/b.txt", None),
            ("DELETE", "/v1/sessions/{}/files/a.txt", None),
            ("GET", "/v1/sessions/{}/blobs/" + blob, None),
            ("DELETE", "/v1/sessions/{}", None),
        ]
        for method, template, body in calls:
            theirs = bob.request(method, template.format(mine), json=body)
            nobody = bob.request(method, template.format(missing), json=body)
            assert theirs.status_code == nobody.status_code == 404, (method, template)
            assert theirs.json()["error"] == nobody.json()["error"] == "session_not_found"
        assert [s["session_id"] for s in bob.get("/v1/sessions").json()] == []
        # Nothing Bob did reached Alice's session.
        assert alice.get(f"/v1/sessions/{mine}").json()["steps"] == 2
        assert alice.get(f"/v1/sessions/{mine}/files/a.txt").content == b"secret"
        assert [s["session_id"] for s in alice.get("/v1/sessions").json()] == [mine]


def test_a_blob_no_step_of_this_session_referred_to_is_a_404(tmp_path: Path) -> None:
    with fake_server(tmp_path, FakeBackend(_answer)) as server, server.client() as alice:
        first = alice.post("/v1/sessions").json()["session_id"]
        second = alice.post("/v1/sessions").json()["session_id"]
        ran = alice.post(f"/v1/sessions/{first}/run", json={"code": "x = 1"}).json()
        blob = ran["outcome"]["result"]["stdout"]["sha256"]
        assert alice.get(f"/v1/sessions/{first}/blobs/{blob}").content == b"ran\n"
        assert alice.get(f"/v1/sessions/{second}/blobs/{blob}").status_code == 404
        # The code itself is in the blob store too, but no outcome hands it out as output.
        code_sha = ran["outcome"]["action"]["code_sha256"]
        assert alice.get(f"/v1/sessions/{first}/blobs/{code_sha}").status_code == 404


def test_over_the_session_quota_is_a_429_until_one_is_deleted(tmp_path: Path) -> None:
    tokens = token_store(Quota(max_sessions=2))
    with (
        fake_server(tmp_path, FakeBackend(_answer), tokens=tokens) as server,
        server.client(ALICE) as alice,
        server.client(BOB) as bob,
    ):
        first, _ = (alice.post("/v1/sessions").json()["session_id"] for _ in range(2))
        over = alice.post("/v1/sessions")
        assert over.status_code == 429
        assert over.json()["error"] == "quota_sessions"
        assert "max_sessions=2" in over.json()["message"]
        assert bob.post("/v1/sessions").status_code == 201  # Bob's quota is his own
        assert alice.delete(f"/v1/sessions/{first}").status_code == 204
        assert alice.post("/v1/sessions").status_code == 201


def test_over_the_concurrent_run_quota_is_a_429_while_the_others_run(tmp_path: Path) -> None:
    gate = Gate()
    tokens = token_store(Quota(max_concurrent_runs=2))
    with (
        fake_server(tmp_path, FakeBackend(gate), tokens=tokens) as server,
        server.client() as alice,
        ThreadPoolExecutor(2) as pool,
    ):
        ids = [alice.post("/v1/sessions").json()["session_id"] for _ in range(3)]

        def run(session_id: str) -> int:
            with server.client() as own:
                reply = own.post(f"/v1/sessions/{session_id}/run", json={"code": "x"})
                return reply.status_code

        running = [pool.submit(run, session_id) for session_id in ids[:2]]
        for _ in running:
            assert gate.entered.acquire(timeout=_HELD_SECONDS)
        over = alice.post(f"/v1/sessions/{ids[2]}/run", json={"code": "x"})
        gate.opened.set()
        assert [f.result() for f in running] == [200, 200]
        assert over.status_code == 429
        assert over.json()["error"] == "quota_concurrent_runs"
        assert alice.post(f"/v1/sessions/{ids[2]}/run", json={"code": "x"}).status_code == 200


def test_over_the_cpu_quota_is_a_429_for_that_token_only(tmp_path: Path) -> None:
    tokens = token_store(Quota(cpu_seconds=1.0))  # each fake run reports 0.75 CPU seconds
    with (
        fake_server(tmp_path, FakeBackend(_answer), tokens=tokens) as server,
        server.client(ALICE) as alice,
        server.client(BOB) as bob,
    ):
        session_id = alice.post("/v1/sessions").json()["session_id"]
        statuses = [
            alice.post(f"/v1/sessions/{session_id}/run", json={"code": "x"}).status_code
            for _ in range(3)
        ]
        assert statuses == [200, 200, 429]
        over = alice.post(f"/v1/sessions/{session_id}/run", json={"code": "x"})
        assert over.json()["error"] == "quota_cpu_seconds"
        theirs = bob.post("/v1/sessions").json()["session_id"]
        assert bob.post(f"/v1/sessions/{theirs}/run", json={"code": "x"}).status_code == 200


def test_a_run_is_bounded_by_what_is_left_of_its_tokens_cpu_quota(tmp_path: Path) -> None:
    seen: list[float] = []

    def record(request: ExecRequest) -> FakeReply:
        seen.append(request.limits.cpu_seconds)
        return FakeReply(stdout="ran\n", usage=Usage(cpu_seconds=0.75))

    tokens = token_store(Quota(cpu_seconds=1.0))
    with (
        fake_server(tmp_path, FakeBackend(record), tokens=tokens) as server,
        server.client(ALICE) as alice,
    ):
        session_id = alice.post("/v1/sessions").json()["session_id"]
        first = alice.post(f"/v1/sessions/{session_id}/run", json={"code": "x"})
        second = alice.post(f"/v1/sessions/{session_id}/run", json={"code": "x"})
        assert (first.status_code, second.status_code) == (200, 200)
        # The first run may use the whole quota (under the policy's 10 s); the second only the
        # 0.25 s the first left; the decision in the result states the narrowed limit.
        assert seen == [1.0, 0.25]
        assert second.json()["outcome"]["decision"]["limits"]["cpu_seconds"] == 0.25
        assert alice.post(f"/v1/sessions/{session_id}/run", json={"code": "x"}).status_code == 429


def test_runs_in_flight_hold_their_cpu_grant_so_concurrent_runs_cannot_overspend(
    tmp_path: Path,
) -> None:
    gate = Gate()
    tokens = token_store(Quota(cpu_seconds=11.0, max_concurrent_runs=4))
    with (
        fake_server(tmp_path, FakeBackend(gate), tokens=tokens) as server,
        server.client(ALICE) as alice,
        ThreadPoolExecutor(2) as pool,
    ):
        ids = [alice.post("/v1/sessions").json()["session_id"] for _ in range(3)]

        def run(session_id: str) -> float:
            with server.client() as own:
                reply = own.post(f"/v1/sessions/{session_id}/run", json={"code": "x"})
                return float(reply.json()["outcome"]["decision"]["limits"]["cpu_seconds"])

        running = [pool.submit(run, session_id) for session_id in ids[:2]]
        for _ in running:
            assert gate.entered.acquire(timeout=_HELD_SECONDS)
        # 10 s (the policy's limit) and then the 1 s left are held by the two runs in flight.
        over = alice.post(f"/v1/sessions/{ids[2]}/run", json={"code": "x"})
        gate.opened.set()
        assert sorted(f.result() for f in running) == [1.0, 10.0]
        assert over.status_code == 429 and over.json()["error"] == "quota_cpu_seconds"
        assert "held by runs in flight" in over.json()["message"]
        # The fake runs report no CPU used: the grants are released, nothing was charged.
        assert alice.post(f"/v1/sessions/{ids[2]}/run", json={"code": "x"}).status_code == 200


def test_the_static_check_is_charged_to_the_cpu_quota(tmp_path: Path) -> None:
    """``/v1/check`` runs in the server process: its CPU counts against the token's quota (and
    it holds one of the token's concurrent runs), so one token cannot keep the server's
    interpreter busy for free."""
    tokens = token_store(Quota(cpu_seconds=0.001))
    code = "\n".join(f"value_{i} = sorted([{i}, 2, 3])" for i in range(2000))
    with (
        fake_server(tmp_path, FakeBackend(_answer), tokens=tokens) as server,
        server.client(ALICE) as alice,
        server.client(BOB) as bob,
    ):
        assert alice.post("/v1/check", json={"code": code}).status_code == 200
        over = alice.post("/v1/check", json={"code": "x = 1"})
        assert over.status_code == 429 and over.json()["error"] == "quota_cpu_seconds"
        assert bob.post("/v1/check", json={"code": "x = 1"}).status_code == 200
