"""``safeexec serve`` as real server processes: graceful shutdown drains the run in flight and
leaves no process behind; a restart loses sessions but keeps both logs; two replicas on two
loopback ports, with a client that routes by the replica in the session id."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil
from service_support import ALICE, BOB, bearer

from safeexec.audit.log import verify_log
from safeexec.service.auth import TOKENS_ENV
from safeexec.service.client import Client, ServiceError

_BOUND_SECONDS = 60.0

SLOW_CELL = (
    "import time\nopen('started', 'w').write('1')\nfor _ in range(40):\n    time.sleep(0.05)\n"
    "print('drained')\n"
)


@dataclass
class ServerProcess:
    process: subprocess.Popen[bytes]
    url: str

    def stop(self) -> bool:
        """SIGTERM; ``True`` once the process has drained and ended by that signal (uvicorn
        raises the signal again after its shutdown, so the exit status says how it ended)."""
        self.process.send_signal(signal.SIGTERM)
        return _ended_by_sigterm(self.process)


def _ended_by_sigterm(process: subprocess.Popen[bytes]) -> bool:
    return process.wait(timeout=_BOUND_SECONDS) == -signal.SIGTERM


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _eventually(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + _BOUND_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {_BOUND_SECONDS}s: {what}")
        time.sleep(0.05)


@contextlib.contextmanager
def server_process(
    state_dir: Path, log: Path, *, replica_id: str = "r0", options: tuple[str, ...] = ()
) -> Iterator[ServerProcess]:
    port = _free_port()
    env = {**os.environ, TOKENS_ENV: f"alice={ALICE},bob={BOB}"}
    command = [str(Path(sys.executable).with_name("safeexec")), "serve", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--state-dir", str(state_dir), "--mode", "native"]
    command += ["--replica-id", replica_id, "--drain-seconds", "30", *options]
    with log.open("ab") as sink:
        process = subprocess.Popen(command, env=env, stdout=sink, stderr=sink)
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        assert process.poll() is None, log.read_text()
        try:
            return httpx.get(f"{url}/v1/health", timeout=1.0).status_code == 200
        except httpx.TransportError:
            return False

    try:
        _eventually(up, "the server answered its health check")
        yield ServerProcess(process=process, url=url)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=_BOUND_SECONDS)


def test_sigterm_drains_the_run_in_flight_and_leaves_no_process(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with server_process(tmp_path / "state", log) as server:
        http = httpx.Client(base_url=server.url, headers=bearer(ALICE), timeout=_BOUND_SECONDS)
        with http, ThreadPoolExecutor(1) as pool:
            session_id = http.post("/v1/sessions").json()["session_id"]
            assert http.post(f"/v1/sessions/{session_id}/run", json={"code": "x = 1"}).is_success
            descendants = psutil.Process(server.process.pid).children(recursive=True)
            assert descendants  # the native template and the session's worker
            running = pool.submit(
                http.post, f"/v1/sessions/{session_id}/run", json={"code": SLOW_CELL}
            )
            _eventually(
                lambda: http.get(f"/v1/sessions/{session_id}/files/started").is_success,
                "the slow cell started",
            )
            server.process.send_signal(signal.SIGTERM)
            drained = running.result(timeout=_BOUND_SECONDS)
            assert _ended_by_sigterm(server.process), log.read_text()
    assert "Application shutdown complete" in log.read_text()
    assert drained.status_code == 200
    assert drained.json()["status"] == "ok"
    assert "stdout ---\ndrained\n" in drained.json()["observation"]["text"]
    _eventually(
        lambda: not [p for p in descendants if p.is_running() and p.status() != "zombie"],
        "every process the server started is gone",
    )


def test_past_max_connections_a_stranger_makes_room_for_a_token(tmp_path: Path) -> None:
    with server_process(
        tmp_path / "state", tmp_path / "server.log", options=("--max-connections", "3")
    ) as server:
        host, port = server.url.removeprefix("http://").split(":")
        idle = [socket.create_connection((host, int(port)), timeout=10) for _ in range(3)]
        try:
            answer = httpx.get(f"{server.url}/v1/sessions", headers=bearer(ALICE), timeout=10)
            assert answer.status_code == 200, answer.text
            assert idle[0].recv(1) == b""  # the oldest stranger was closed for it
        finally:
            for conn in idle:
                conn.close()


def test_a_restart_loses_sessions_but_keeps_the_audit_and_request_logs(tmp_path: Path) -> None:
    state, log = tmp_path / "state", tmp_path / "server.log"
    with server_process(state, log) as first, Client(first.url, token=ALICE) as client:
        old = client.session_id
        client.run_code("print('before')")
        client._owned = False  # leave the session open: the stop must close it
        assert first.stop()
    with server_process(state, log) as second:
        with pytest_raises_404():
            Client(second.url, token=ALICE, session_id=old)
        with Client(second.url, token=ALICE) as again:
            again.run_code("print('after')")
        assert second.stop()
    verified = verify_log(state)
    assert verified.ok, verified
    assert verified.events == 2
    requests = [json.loads(line) for line in (state / "requests.jsonl").open()]
    assert [r["session_id"] for r in requests].count(old) >= 2  # the run, then the 404
    assert {r["token_id"] for r in requests if r["route"] != "/v1/health"} == {"alice"}
    assert {r["token_id"] for r in requests if r["route"] == "/v1/health"} == {None}


@contextlib.contextmanager
def pytest_raises_404() -> Iterator[None]:
    try:
        yield
    except ServiceError as exc:
        assert exc.status == 404, exc
    else:
        raise AssertionError("expected a 404")


def test_two_replicas_with_a_client_that_routes_by_session_id(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with (
        server_process(tmp_path / "a", log, replica_id="a") as a,
        server_process(tmp_path / "b", log, replica_id="b") as b,
    ):
        replicas = {"a": a.url, "b": b.url}
        with (
            Client(replicas, token=ALICE, replica="a") as on_a,
            Client(replicas, token=ALICE, replica="b") as on_b,
        ):
            assert on_a.session_id.startswith("a-") and on_b.session_id.startswith("b-")
            on_a.run_code("where = 'a'")
            on_b.run_code("where = 'b'")
            # Attaching by session id alone finds the right replica, state and all.
            for session_id, expected in ((on_a.session_id, "a"), (on_b.session_id, "b")):
                attached = Client(replicas, token=ALICE, session_id=session_id)
                with attached:
                    shown = attached.run_code("print(where)").observation.text
                    assert shown.endswith(expected)
            # A replica knows only its own sessions: without affinity, a 404.
            with httpx.Client(headers=bearer(ALICE)) as http:
                stray = http.get(f"{b.url}/v1/sessions/{on_a.session_id}")
                assert stray.status_code == 404
        assert a.stop() and b.stop()
    for state in (tmp_path / "a", tmp_path / "b"):
        assert verify_log(state).ok
