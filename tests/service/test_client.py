"""``safeexec.service.client.Client``: Session's face over the service, on a real loopback
server."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "service"))
from service_support import ALICE, BOB, serve

from safeexec import Session
from safeexec.errors import ConfigurationError
from safeexec.model.values import Budget, ExecStatus, OutputChunk, Verdict
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


STREAMING = "```python\nimport sys\nprint('one', flush=True)\nprint('two', file=sys.stderr)\n```"


def _faces(session: Session | Client) -> tuple[list[tuple[str, str]], list[object], str, Budget]:
    """``run(on_output=)``, ``stream``, ``arun`` and ``budget``, the same against either."""
    chunks: list[OutputChunk] = []
    session.run(STREAMING, on_output=chunks.append)
    heard = sorted((c.stream.value, c.text) for c in chunks)

    async def asynchronous() -> tuple[list[object], str]:
        items = [item async for item in session.stream(STREAMING)]
        kinds = [type(item).__name__ for item in items]
        done = await session.arun("```python\nprint(6 * 7)\n```")
        return kinds, done.observation.text

    kinds, text = asyncio.run(asynchronous())
    return heard, kinds, text, session.budget


def test_the_client_has_sessions_streaming_async_and_budget_faces(tmp_path: Path) -> None:
    with Session(policy="default", state_dir=tmp_path / "direct") as session:
        direct = _faces(session)
    with (
        serve(tmp_path / "state", modes=("native",)) as server,
        Client(server.base_url, token=ALICE, policy="default") as client,
    ):
        remote = _faces(client)
    assert remote[0] == direct[0] == [("stderr", "two\n"), ("stdout", "one\n")]
    assert set(remote[1]) == set(direct[1]) == {"OutputChunk", "Outcome"}
    assert remote[1][-1] == direct[1][-1] == "Outcome"
    assert remote[2] == direct[2]
    # The same steps counted; CPU-seconds differ by what each run used.
    assert (remote[3].steps_left, remote[3].tool_calls_left) == (
        direct[3].steps_left,
        direct[3].tool_calls_left,
    )
    assert remote[3].steps_left == session.policy.budget.steps - 3
    assert remote[3].cpu_seconds_left < session.policy.budget.cpu_seconds
