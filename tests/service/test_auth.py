"""Bearer tokens: required on every route but health, stored hashed, ids (never tokens) logged."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from service_support import ALICE, BOB, fake_server

from safeexec.backends.fake import FakeBackend, FakeReply
from safeexec.errors import ConfigurationError
from safeexec.service.auth import (
    TOKENS_ENV,
    TokenEntry,
    TokenStore,
    hash_token,
    load_tokens,
    token_store,
    tokens_from_env,
)
from safeexec.service.quotas import Quota


def _fake() -> FakeBackend:
    return FakeBackend(lambda request: FakeReply(stdout="ran\n"))


def test_the_store_authenticates_by_digest_and_refuses_everything_else() -> None:
    store = TokenStore([TokenEntry(token_id="alice", sha256=hash_token(ALICE), quota=Quota())])
    entry = store.authenticate(ALICE)
    assert entry is not None and entry.token_id == "alice"
    assert store.authenticate(BOB) is None
    assert store.authenticate(ALICE[:-1]) is None
    assert store.authenticate("") is None
    assert store.authenticate(None) is None
    assert store.authenticate(hash_token(ALICE)) is None  # the digest is not the token
    assert hash_token(ALICE) not in repr(entry)


def test_an_empty_store_authenticates_nobody() -> None:
    assert TokenStore([]).authenticate(ALICE) is None


def test_two_ids_for_one_token_are_refused() -> None:
    same = hash_token(ALICE)
    with pytest.raises(ConfigurationError, match="shares its token"):
        TokenStore(
            [
                TokenEntry(token_id="a", sha256=same, quota=Quota()),
                TokenEntry(token_id="b", sha256=same, quota=Quota()),
            ]
        )


def test_a_tokens_file_holds_digests_and_quotas(tmp_path: Path) -> None:
    path = tmp_path / "tokens.toml"
    path.write_text(
        f'[tokens.alice]\nsha256 = "{hash_token(ALICE)}"\nmax_sessions = 2\ncpu_seconds = 1.5\n'
    )
    (entry,) = load_tokens(path)
    assert entry.token_id == "alice"
    assert entry.quota == Quota(max_sessions=2, cpu_seconds=1.5)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (f'[tokens.alice]\ntoken = "{ALICE}"\n', "unknown keys"),
        ('[tokens.alice]\nsha256 = "abc"\n', "64 lowercase hex"),
        (f'[tokens.alice]\nsha256 = "{hash_token(ALICE)}"\nmax_sessions = -1\n', ">= 0"),
        (f'[tokens.alice]\nsha256 = "{hash_token(ALICE)}"\nmax_sessions = 1.5\n', "whole"),
        (f'[tokens."bad id!"]\nsha256 = "{hash_token(ALICE)}"\n', "token id"),
        ("[other]\n", "only"),
        ("not toml [", "not TOML"),
    ],
)
def test_a_bad_tokens_file_is_refused_precisely(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "tokens.toml"
    path.write_text(body)
    with pytest.raises(ConfigurationError, match=message):
        load_tokens(path)


def test_tokens_from_the_environment_are_hashed_on_load() -> None:
    entries = tokens_from_env({TOKENS_ENV: f"alice={ALICE}, bob={BOB}"})
    assert [(e.token_id, e.sha256) for e in entries] == [
        ("alice", hash_token(ALICE)),
        ("bob", hash_token(BOB)),
    ]
    with pytest.raises(ConfigurationError, match="at least"):
        tokens_from_env({TOKENS_ENV: "alice=short"})


def test_no_tokens_at_all_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="no tokens"):
        token_store(None, {})


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer not-a-known-token-at-all"},
        {"Authorization": f"Basic {ALICE}"},
        {"Authorization": "Bearer"},
        {"Authorization": f"bearer{ALICE}"},
    ],
)
def test_every_route_but_health_needs_a_known_token(
    tmp_path: Path, headers: dict[str, str]
) -> None:
    with fake_server(tmp_path, _fake()) as server, server.client() as alice:
        session_id = alice.post("/v1/sessions").json()["session_id"]
        with server.client(token=None, headers=headers) as anonymous:
            assert anonymous.get("/v1/health").status_code == 200
            calls = [
                ("POST", "/v1/sessions"),
                ("GET", "/v1/sessions"),
                ("GET", f"/v1/sessions/{session_id}"),
                ("POST", f"/v1/sessions/{session_id}/run"),
                ("POST", f"/v1/sessions/{session_id}/interrupt"),
                ("GET", f"/v1/sessions/{session_id}/files"),
                ("PUT", f"/v1/sessions/{session_id}/files/a.txt"),
                ("GET", f"/v1/sessions/{session_id}/files/a.txt"),
                ("DELETE", f"/v1/sessions/{session_id}/files/a.txt"),
                ("GET", f"/v1/sessions/{session_id}/blobs/{'0' * 64}"),
                ("DELETE", f"/v1/sessions/{session_id}"),
                ("POST", "/v1/check"),
            ]
            for method, path in calls:
                response = anonymous.request(method, path, json={"code": "print(1)"})
                assert response.status_code == 401, (method, path, response.text)
                assert response.json()["error"] == "unauthorized"
                assert response.headers["www-authenticate"] == "Bearer"
        with server.client() as alice:  # the session is still there, untouched
            assert alice.get(f"/v1/sessions/{session_id}").json()["steps"] == 0


def test_the_request_log_names_token_ids_and_never_tokens(tmp_path: Path) -> None:
    with fake_server(tmp_path, _fake()) as server, server.client() as alice:
        session_id = alice.post("/v1/sessions").json()["session_id"]
        assert alice.post(f"/v1/sessions/{session_id}/run", json={"code": "x=1"}).is_success
        with server.client(BOB) as bob:
            assert bob.get(f"/v1/sessions/{session_id}").status_code == 404
        with server.client("Bearer-of-a-wrong-token-123456") as stranger:
            assert stranger.get("/v1/sessions").status_code == 401
    raw = (tmp_path / "state" / "requests.jsonl").read_text()
    for secret in (ALICE, BOB, "Bearer-of-a-wrong-token-123456", hash_token(ALICE)):
        assert secret not in raw
    lines = [json.loads(line) for line in raw.splitlines()]
    assert [(r["token_id"], r["method"], r["route"], r["status"]) for r in lines] == [
        ("alice", "POST", "/v1/sessions", 201),
        ("alice", "POST", "/v1/sessions/{session_id}/run", 200),
        ("bob", "GET", "/v1/sessions/{session_id}", 404),
        (None, "GET", "/v1/sessions", 401),
    ]
    assert {r["session_id"] for r in lines[1:3]} == {session_id}
    assert all(r["client"].startswith("127.0.0.1:") for r in lines)


@pytest.mark.parametrize("authorization", [None, "Bearer not-a-known-token", "Basic YTpi"])
def test_a_strangers_body_is_never_read(tmp_path: Path, authorization: str | None) -> None:
    """A client without a known token declares a 3 MiB body (under the limit), sends a few
    bytes and stalls: the 401 comes at once, the body unread (the server buffers nothing of
    it), and the connection closes."""
    with fake_server(tmp_path, _fake()) as server:
        host, port = server.base_url.removeprefix("http://").split(":")
        head = "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        if authorization is not None:
            head += f"Authorization: {authorization}\r\n"
        head += f"Content-Length: {3 * 1024 * 1024}\r\n\r\n"
        with socket.create_connection((host, int(port)), timeout=10) as conn:
            conn.sendall(head.encode() + b'{"mode": ')
            answer = b""
            while chunk := conn.recv(65536):  # the server closes after its answer
                answer += chunk
        status, _, rest = answer.partition(b"\r\n")
        assert status == b"HTTP/1.1 401 Unauthorized", answer
        assert b"connection: close" in rest.lower(), answer
        with server.client() as alice:  # a known token's body is read as before
            assert alice.post("/v1/sessions", json={"mode": "fake"}).status_code == 201
