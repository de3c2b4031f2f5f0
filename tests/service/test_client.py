"""``safeexec.service.client.Client``: Session's face over the service, on a real loopback
server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "service"))
from service_support import ALICE, BOB, serve

from safeexec import Session
from safeexec.errors import ConfigurationError
from safeexec.model.values import ExecStatus, Verdict
from safeexec.service.client import Client, ServiceError, replica_of

STEPS = [
    "```python\nsquares = [n * n for n in range(10)]\nprint(sum(squares))\n```",
    "```python\nprint(max(squares))\n```",
    "```python\nimport subprocess\n```",
    "```python\nopen('out.txt', 'w').write('made inside')\n```",
]


def _walk(session: Session | Client) -> list[tuple[str, str | None, str]]:
    """The same code against either: that is the point of the Client."""
    seen = []
    session.files.write("in.txt", "given")
    for step in STEPS:
        outcome = session.run(step)
        status = None if outcome.result is None else outcome.result.status.value
        seen.append((outcome.decision.verdict.value, status, outcome.observation.text))
    seen.append(("file", None, session.files.read("out.txt").decode()))
    seen.append(("list", None, ",".join(e.name for e in session.files.list())))
    return seen


def test_code_written_for_session_runs_unchanged_on_the_service(tmp_path: Path) -> None:
    with Session(policy="default", state_dir=tmp_path / "direct") as session:
        direct = _walk(session)
    with serve(tmp_path / "state", modes=("native",)) as server:
        with Client(server.base_url, token=ALICE, policy="default") as client:
            remote = _walk(client)
            assert client.session_id.startswith("r0-")
        with server.client() as alice:  # closing the client deleted its session
            assert alice.get("/v1/sessions").json() == []
    assert remote == direct
    assert [r[0] for r in remote[:4]] == ["allow", "allow", "deny", "allow"]


def test_client_errors_are_the_librarys(tmp_path: Path) -> None:
    with (
        serve(tmp_path / "state", modes=("native",)) as server,
        Client(server.base_url, token=ALICE) as mine,
    ):
        outcome = mine.run("```python\nprint('hi')\n```")
        assert outcome.result is not None and outcome.result.status is ExecStatus.OK
        assert mine.blob(outcome.result.stdout) == b"hi\n"
        assert mine.check("import socket").verdict is Verdict.DENY
        with pytest.raises(ServiceError) as theirs:
            Client(server.base_url, token=BOB, session_id=mine.session_id)
        assert theirs.value.status == 404 and theirs.value.error == "session_not_found"
        with pytest.raises(ServiceError) as nobody:
            Client(server.base_url, token="no-such-token-1234567890")
        assert nobody.value.status == 401
        with pytest.raises(ServiceError, match="not offered"):
            Client(server.base_url, token=ALICE, policy="strict")


def test_replica_ids_come_from_session_ids() -> None:
    assert replica_of("east-1-0123abcd") == "east-1"
    with pytest.raises(ConfigurationError):
        replica_of("nodash")


def test_the_restricted_mode_is_served_too(tmp_path: Path) -> None:
    with (
        serve(tmp_path / "state", modes=("native", "restricted")) as server,
        Client(server.base_url, token=ALICE, mode="restricted") as client,
    ):
        assert client.mode == "restricted"
        outcome = client.run_code("total = sum(range(4))\nprint(total)")
        assert outcome.decision.backend == "restricted"
        assert outcome.observation.text.endswith("6")
