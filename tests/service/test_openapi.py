"""The OpenAPI schema the server serves is the one checked into the repo."""

from __future__ import annotations

import json
from pathlib import Path

from service_support import fake_server

from safeexec.backends.fake import FakeBackend, not_executed
from safeexec.service.openapi import SCHEMA_PATH, current_schema, render


def test_the_served_schema_equals_the_checked_in_file(tmp_path: Path) -> None:
    checked_in = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    with (
        fake_server(tmp_path, FakeBackend(not_executed)) as server,
        server.client(token=None) as anonymous,
    ):
        served = anonymous.get("/v1/openapi.json")
    assert served.status_code == 200
    assert served.json() == checked_in, "regenerate: python -m safeexec.service.openapi"
    assert render(current_schema()) == SCHEMA_PATH.read_text(encoding="utf-8")


def test_the_schema_lists_every_route_and_the_bearer_scheme() -> None:
    schema = current_schema()
    assert set(schema["paths"]) == {
        "/v1/health",
        "/v1/metrics",
        "/v1/check",
        "/v1/sessions",
        "/v1/sessions/{session_id}",
        "/v1/sessions/{session_id}/run",
        "/v1/sessions/{session_id}/events",
        "/v1/sessions/{session_id}/interrupt",
        "/v1/sessions/{session_id}/files",
        "/v1/sessions/{session_id}/files/{path}",
        "/v1/sessions/{session_id}/blobs/{sha256}",
    }
    assert schema["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    run = schema["paths"]["/v1/sessions/{session_id}/run"]["post"]
    assert {"401", "404", "429", "502"} <= set(run["responses"])
    assert schema["paths"]["/v1/metrics"]["get"]["security"] == [{"HTTPBearer": []}]
    assert run["security"] == [{"HTTPBearer": []}]
    assert "security" not in schema["paths"]["/v1/health"]["get"]
