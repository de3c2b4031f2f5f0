"""``GET /v1/sessions/{id}/events``: a running cell's output arrives while it runs (SSE)."""

from __future__ import annotations

import asyncio
import json
import queue
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from service_support import ALICE, BOB, RunningServer, bearer, fake_server, serve

from safeexec.backends.fake import FakeBackend, FakeReply
from safeexec.model.values import OutputChunk, StreamName
from safeexec.service.events import EventHub, ServerEvent

_BOUND_SECONDS = 60.0

WAITING_CELL = (
    "import os, sys, time\n"
    "print('first', flush=True)\n"
    "print('to stderr', file=sys.stderr, flush=True)\n"
    "for _ in range(1200):\n"
    "    if os.path.exists('go'):\n"
    "        break\n"
    "    time.sleep(0.05)\n"
    "print('second')\n"
)


def _events(
    server: RunningServer, session_id: str, token: str = ALICE
) -> Iterator[tuple[str, dict[str, object]]]:
    """(name, data) of each event on the session's stream, as they arrive."""
    client = httpx.Client(base_url=server.base_url, headers=bearer(token), timeout=_BOUND_SECONDS)
    with client, client.stream("GET", f"/v1/sessions/{session_id}/events") as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: ") and name is not None:
                yield name, json.loads(line.removeprefix("data: "))
                name = None


def _collect(server: RunningServer, session_id: str, into: queue.Queue[object]) -> None:
    try:
        for event in _events(server, session_id):
            into.put(event)
            if event[0] == "closed":
                return
    except Exception as exc:  # the test thread reports it
        into.put(exc)


def _next(events: queue.Queue[object], name: str) -> dict[str, object]:
    while True:
        item = events.get(timeout=_BOUND_SECONDS)
        assert not isinstance(item, Exception), item
        assert isinstance(item, tuple)
        if item[0] == name:
            return item[1]  # type: ignore[no-any-return]


def test_output_streams_while_the_cell_runs_then_the_step_and_the_close(tmp_path: Path) -> None:
    with serve(tmp_path / "state", modes=("native",)) as server, server.client() as alice:
        session_id = alice.post("/v1/sessions").json()["session_id"]
        events: queue.Queue[object] = queue.Queue()
        listener = threading.Thread(target=_collect, args=(server, session_id, events))
        listener.start()
        (record,) = server.app.runtime.registry.all()
        deadline = threading.Event()
        while len(record.events) == 0 and not deadline.wait(0.01):
            pass  # until the listener is subscribed (bounded by the queue timeouts below)
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(
                alice.post, f"/v1/sessions/{session_id}/run", json={"code": WAITING_CELL}
            )
            first = _next(events, "output")
            # The cell is still running (it waits for 'go'): the output came while it ran.
            assert not running.done()
            assert first["stream"] == "stdout" and first["text"] == "first\n"
            assert _next(events, "output") == {
                "stream": "stderr",
                "text": "to stderr\n",
                "run_id": first["run_id"],
            }
            # Written by the host directly: Session.files waits for the running cell to end.
            (record.session.workdir / "go").write_bytes(b"")
            assert _next(events, "output")["text"] == "second\n"
            step = _next(events, "step")
            ran = running.result(timeout=_BOUND_SECONDS)
        assert ran.headers["x-request-id"] == first["run_id"] == step["run_id"]
        assert step["action_id"] == ran.json()["outcome"]["action"]["action_id"]
        assert step["status"] == "ok" and step["verdict"] == "allow"
        assert alice.delete(f"/v1/sessions/{session_id}").status_code == 204
        assert _next(events, "closed") == {"reason": "the session was closed"}
        listener.join(_BOUND_SECONDS)


def test_another_tokens_event_stream_is_a_404(tmp_path: Path) -> None:
    with serve(tmp_path / "state", modes=("native",)) as server, server.client() as alice:
        session_id = alice.post("/v1/sessions").json()["session_id"]
        with server.client(BOB) as bob:
            assert bob.get(f"/v1/sessions/{session_id}/events").status_code == 404


def test_a_subscriber_that_falls_behind_is_dropped_with_a_lagged_event() -> None:
    async def scenario() -> list[str]:
        hub = EventHub(max_queued=4)
        async with hub.subscribe() as slow, hub.subscribe() as fast:
            for n in range(3):
                hub.publish(ServerEvent(name="output", data={"n": n}))
                assert await fast.next(timeout=1) is not None
            for n in range(10):  # slow reads nothing now; its queue stays bounded
                hub.publish(ServerEvent(name="output", data={"n": n}))
                assert await fast.next(timeout=1) is not None
            names = []
            while (event := await slow.next(timeout=0.01)) is not None:
                names.append(event.name)
            assert len(hub) == 1  # only fast is left
            publish = hub.publisher("q-1")
            publish(OutputChunk(stream=StreamName.STDOUT, text="x"))
            await asyncio.sleep(0)
            got = await fast.next(timeout=1)
            assert got is not None and got.data == {
                "stream": "stdout",
                "text": "x",
                "run_id": "q-1",
            }
            return names

    assert asyncio.run(scenario()) == ["output", "output", "output", "lagged"]


def test_an_open_event_stream_does_not_keep_its_session_from_idling_out(tmp_path: Path) -> None:
    backend = FakeBackend(lambda _: FakeReply(stdout="ok\n"))
    with (
        fake_server(
            tmp_path, backend, idle_seconds=0.5, sweep_seconds=0.1, heartbeat_seconds=0.1
        ) as server,
        server.client() as alice,
    ):
        session_id = alice.post("/v1/sessions").json()["session_id"]
        deadline = time.monotonic() + _BOUND_SECONDS
        with alice.stream("GET", f"/v1/sessions/{session_id}/events") as stream:
            lines = []
            for line in stream.iter_lines():  # a heartbeat every 0.1 s until the stream ends
                assert time.monotonic() < deadline, "the stream kept its session open"
                lines.append(line)
        assert "event: closed" in lines
        data = [json.loads(line.removeprefix("data: ")) for line in lines if line[:6] == "data: "]
        assert data == [{"reason": "the session was idle too long"}]
        assert alice.get(f"/v1/sessions/{session_id}").status_code == 404
