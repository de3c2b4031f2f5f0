"""One error contract: every 4xx and 5xx body is ``{"error", "message"}`` (a 502 adds ``run``),
validation and unknown routes included; the OpenAPI document describes every response body;
blobs are served with their recorded media type; no message shows a Python repr.

The walk goes over the OpenAPI document the server serves: every operation is called without a
token, with a token and a session id nobody holds, and (where it takes a JSON body) with a
malformed one; every answer's status must be one the document lists for that operation, and
every error body must have the documented shape.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
from service_support import fake_server

from safeexec.backends.fake import FakeBackend, FakeReply
from safeexec.model.values import ExecRequest

_PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 16
_REPR = re.compile(r"=\s*'|\[\s*'|\(\s*'|<[A-Za-z_.]+ object at")
"""What a Python repr leaves in a message: ``x='a'``, ``['a', ...]``, ``<Foo object at ...>``."""


def _answer(request: ExecRequest) -> FakeReply:
    if "png" in request.code:
        return FakeReply(stdout="drew\n", artifacts={"plot.png": _PNG})
    return FakeReply(stdout="ok\n")


def _error_body(response: httpx.Response) -> dict[str, Any]:
    """The body of an error response, checked against the documented shape."""
    assert response.headers["content-type"].startswith("application/json"), response.text
    body = response.json()
    expected = {"error", "message", "run"} if response.status_code == 502 else {"error", "message"}
    assert set(body) == expected, body
    assert isinstance(body["error"], str) and re.fullmatch(r"[a-z_]+", body["error"])
    assert isinstance(body["message"], str) and body["message"]
    assert not _REPR.search(body["message"]), body["message"]
    return body  # type: ignore[no-any-return]


def _documented_error_schemas(schema: dict[str, Any]) -> list[tuple[str, str, str, Any]]:
    found = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if int(status) >= 400:
                    body = response.get("content", {}).get("application/json", {}).get("schema")
                    found.append((path, method, status, body))
    return found


def test_every_documented_error_response_has_the_error_schema(tmp_path: Path) -> None:
    with fake_server(tmp_path, FakeBackend(_answer)) as server, server.client() as alice:
        schema = alice.get("/v1/openapi.json").json()
    documented = _documented_error_schemas(schema)
    assert documented
    for path, method, status, body in documented:
        expected = "CrashOut" if status == "502" else "ErrorOut"
        assert body == {"$ref": f"#/components/schemas/{expected}"}, (path, method, status)
    # FastAPI's own validation shape is nowhere in the document.
    assert "HTTPValidationError" not in schema["components"]["schemas"]


def _fill(path: str) -> str:
    return (
        path.replace("{session_id}", "r0-0123456789abcdef")
        .replace("{path}", "a.txt")
        .replace("{sha256}", "0" * 64)
    )


def test_every_operation_answers_errors_in_the_documented_shape(tmp_path: Path) -> None:
    with (
        fake_server(tmp_path, FakeBackend(_answer)) as server,
        server.client() as alice,
        server.client(token=None) as anonymous,
    ):
        schema = alice.get("/v1/openapi.json").json()
        seen: set[int] = set()
        for path, operations in schema["paths"].items():
            for method, operation in operations.items():
                documented = {int(status) for status in operation["responses"]}
                url = _fill(path)
                calls = [(anonymous, None), (alice, None)]
                if "requestBody" in operation:
                    calls.append((alice, {"unknown_field": 1, "timeout": "soon"}))
                for client, body in calls:
                    answer = client.request(method.upper(), url, json=body)
                    assert answer.status_code in documented, (method, path, answer.status_code)
                    if answer.status_code >= 400:
                        _error_body(answer)
                        seen.add(answer.status_code)
        assert {401, 404, 422} <= seen


def test_unknown_routes_and_methods_answer_in_the_error_shape(tmp_path: Path) -> None:
    with fake_server(tmp_path, FakeBackend(_answer)) as server, server.client() as alice:
        unknown = alice.get("/v1/nothing-here")
        assert unknown.status_code == 404
        assert _error_body(unknown)["error"] == "not_found"
        wrong = alice.patch("/v1/sessions")
        assert wrong.status_code == 405
        assert _error_body(wrong)["error"] == "method_not_allowed"
        assert wrong.headers["allow"] in _error_body(wrong)["message"]
        invalid = alice.post("/v1/sessions", json={"limits": {"cpu_seconds": "lots"}})
        assert invalid.status_code == 422
        body = _error_body(invalid)
        assert body["error"] == "invalid_request" and "limits.cpu_seconds" in body["message"]
        not_json = alice.post(
            "/v1/sessions", content=b"{", headers={"content-type": "application/json"}
        )
        assert not_json.status_code == 422 and _error_body(not_json)["error"] == "invalid_request"


def test_messages_name_values_without_python_reprs(tmp_path: Path) -> None:
    with fake_server(tmp_path, FakeBackend(_answer)) as server, server.client() as alice:
        policy = alice.post("/v1/sessions", json={"policy": "strict"})
        assert policy.status_code == 400
        assert "policy=strict is not offered" in _error_body(policy)["message"]
        mode = alice.post("/v1/sessions", json={"mode": "native"})
        assert mode.status_code == 400
        assert "mode=native is not offered" in _error_body(mode)["message"]
        session_id = alice.post("/v1/sessions").json()["session_id"]
        missing = alice.get(f"/v1/sessions/{session_id}/files/none.txt")
        assert missing.status_code == 404
        _error_body(missing)


def test_a_blob_is_served_with_its_recorded_media_type(tmp_path: Path) -> None:
    with fake_server(tmp_path, FakeBackend(_answer)) as server, server.client() as alice:
        session_id = alice.post("/v1/sessions").json()["session_id"]
        ran = alice.post(f"/v1/sessions/{session_id}/run", json={"code": "png"}).json()
        (artifact,) = ran["artifacts"]
        assert artifact["media_type"] == "image/png"
        png = alice.get(artifact["url"])
        assert png.status_code == 200 and png.content == _PNG
        assert png.headers["content-type"] == "image/png"
        stdout = ran["outcome"]["result"]["stdout"]["sha256"]
        text = alice.get(f"/v1/sessions/{session_id}/blobs/{stdout}")
        assert text.headers["content-type"] == "text/plain; charset=utf-8"
        assert text.text == "drew\n"
