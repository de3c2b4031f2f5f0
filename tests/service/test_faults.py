"""Faults on a real native session behind a real server: a client that leaves mid-run, a cell
that will not stop, a worker killed from outside, deletion and idle expiry — each checked by
the session's processes (found by the uid the host lent its workdir to), over loopback only."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
from service_support import ALICE, RunningServer, serve, token_store

from safeexec.audit.log import AuditLog
from safeexec.model.values import ExecStatus
from safeexec.service.client import Client
from safeexec.service.quotas import Quota

_BOUND_SECONDS = 60.0  # outer bounds of the polls below, never a measured threshold

LONG_CELL = (
    "import time\nopen('started', 'w').write('1')\nfor _ in range(1200):\n    time.sleep(0.05)\n"
)
STUBBORN_CELL = (
    "import time\n"
    "open('started', 'w').write('1')\n"
    "for _ in range(1200):\n"
    "    try:\n"
    "        time.sleep(0.05)\n"
    "    except KeyboardInterrupt:\n"
    "        pass\n"
)


def _eventually(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + _BOUND_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {_BOUND_SECONDS}s: {what}")
        time.sleep(0.05)


def _session_uid(server: RunningServer, session_id: str) -> int:
    """The uid the host lent this session's workdir to: its current worker's processes run as
    it (each worker gets a uid of its own)."""
    (record,) = [r for r in server.app.runtime.registry.all() if r.session_id == session_id]
    uid = os.stat(record.session.workdir).st_uid
    assert uid != os.getuid(), "these tests need a host that gives sessions their own uid (root)"
    return uid


def _pids(uid: int) -> set[int]:
    found = set()
    for process in psutil.process_iter(["uids", "status"]):
        uids = process.info["uids"]
        if uids is not None and uids.real == uid and process.info["status"] != "zombie":
            found.add(process.pid)
    return found


def _native(tmp_path: Path, **config: object):  # type: ignore[no-untyped-def]
    return serve(tmp_path / "state", modes=("native",), **config)


def _post_and_hang_up(server: RunningServer, path: str, body: dict[str, object]) -> socket.socket:
    """Send a request on a raw loopback socket and return it, unread, for the test to close."""
    payload = json.dumps(body).encode()
    host, port = server.base_url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    sock.sendall(
        (
            f"POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {ALICE}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
        ).encode()
        + payload
    )
    return sock


def _started(server: RunningServer, session_id: str) -> Callable[[], bool]:
    def check() -> bool:
        with server.client() as client:
            return client.get(f"/v1/sessions/{session_id}/files/started").status_code == 200

    return check


def _statuses(state_dir: Path) -> list[str | None]:
    with AuditLog(state_dir / "audit.jsonl") as log:
        return [event.status for event in log.read()]


def test_a_client_leaving_mid_run_interrupts_the_cell_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    with _native(tmp_path) as server, server.client() as alice:
        session_id = alice.post("/v1/sessions").json()["session_id"]
        kept = alice.post(f"/v1/sessions/{session_id}/run", json={"code": "kept = 42"})
        assert kept.json()["status"] == "ok"
        uid = _session_uid(server, session_id)
        workers = _pids(uid)
        assert len(workers) == 1
        sock = _post_and_hang_up(server, f"/v1/sessions/{session_id}/run", {"code": LONG_CELL})
        _eventually(_started(server, session_id), "the long cell started")
        sock.close()
        (record,) = server.app.runtime.registry.all()
        _eventually(lambda: not record.running, "the abandoned run ended")
        # Interrupted (not timed out at the wall limit), the state kept, the same worker.
        assert _statuses(server.state_dir)[-1] == "interrupted"
        after = alice.post(f"/v1/sessions/{session_id}/run", json={"code": "print(kept)"})
        assert after.json()["status"] == "ok" and after.json()["state_lost"] is False
        assert after.json()["observation"]["text"].endswith("42")
        assert _pids(uid) == workers
    requests = [json.loads(line) for line in (server.state_dir / "requests.jsonl").open()]
    assert [r["status"] for r in requests if r["route"].endswith("/run")] == [200, 499, 200]


def test_a_cell_that_will_not_stop_is_killed_when_its_client_leaves(tmp_path: Path) -> None:
    with _native(tmp_path) as server, server.client() as alice:
        session_id = alice.post("/v1/sessions").json()["session_id"]
        alice.post(f"/v1/sessions/{session_id}/run", json={"code": "kept = 42"})
        uid = _session_uid(server, session_id)
        (old_worker,) = _pids(uid)
        sock = _post_and_hang_up(server, f"/v1/sessions/{session_id}/run", {"code": STUBBORN_CELL})
        _eventually(_started(server, session_id), "the stubborn cell started")
        sock.close()
        _eventually(lambda: old_worker not in _pids(uid), "the stubborn worker was killed")
        after = alice.post(f"/v1/sessions/{session_id}/run", json={"code": "print('fresh')"})
        assert after.json()["status"] == "ok" and after.json()["state_lost"] is True
        # The fresh worker has a uid of its own (the workdir is lent to it); only it runs.
        assert not _pids(uid)
        assert len(_pids(_session_uid(server, session_id))) == 1


def test_a_worker_killed_from_outside_leaves_the_server_serving(tmp_path: Path) -> None:
    with _native(tmp_path) as server, server.client() as alice:
        session_id = alice.post("/v1/sessions").json()["session_id"]
        other = alice.post("/v1/sessions").json()["session_id"]
        alice.post(f"/v1/sessions/{session_id}/run", json={"code": "x = 1"})
        assert alice.post(f"/v1/sessions/{other}/run", json={"code": "y = 2"}).is_success
        uid = _session_uid(server, session_id)
        (worker,) = _pids(uid)
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(
                alice.post, f"/v1/sessions/{session_id}/run", json={"code": LONG_CELL}
            )
            _eventually(_started(server, session_id), "the long cell started")
            os.kill(worker, signal.SIGKILL)
            crashed = running.result(timeout=_BOUND_SECONDS)
        assert crashed.status_code == 502
        body = crashed.json()
        assert body["error"] == "worker_crashed" and "died during the run" in body["message"]
        assert body["run"]["status"] == "killed"  # the step, recorded as usual
        assert _statuses(tmp_path / "state")[-1] == "killed"
        assert 'safeexec_errors_total{error="worker_crashed"} 1.0' in alice.get("/v1/metrics").text
        assert alice.get("/v1/health").status_code == 200
        again = alice.post(f"/v1/sessions/{session_id}/run", json={"code": "print('back')"})
        assert again.json()["status"] == "ok" and again.json()["state_lost"] is True
        untouched = alice.post(f"/v1/sessions/{other}/run", json={"code": "print(y)"})
        assert untouched.json()["observation"]["text"].endswith("2")


def test_the_client_returns_a_crashed_runs_outcome_as_session_run_would(tmp_path: Path) -> None:
    with (
        _native(tmp_path) as server,
        Client(server.base_url, token=ALICE, mode="native") as remote,
    ):
        remote.run_code("x = 1")
        uid = _session_uid(server, remote.session_id)
        (worker,) = _pids(uid)
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(remote.run_code, LONG_CELL)
            _eventually(_started(server, remote.session_id), "the long cell started")
            os.kill(worker, signal.SIGKILL)
            outcome = running.result(timeout=_BOUND_SECONDS)
        assert outcome.result is not None and outcome.result.status is ExecStatus.KILLED
        again = remote.run_code("print('back')")
        assert again.result is not None and again.result.state_lost


def test_an_interrupted_cell_that_is_killed_is_no_crash(tmp_path: Path) -> None:
    with _native(tmp_path) as server, server.client() as alice:
        session_id = alice.post("/v1/sessions").json()["session_id"]
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(
                alice.post, f"/v1/sessions/{session_id}/run", json={"code": STUBBORN_CELL}
            )
            _eventually(_started(server, session_id), "the stubborn cell started")
            assert alice.post(f"/v1/sessions/{session_id}/interrupt").json()["running"]
            stopped = running.result(timeout=_BOUND_SECONDS)
        assert stopped.status_code == 200  # the host killed it after the grace: asked for
        assert stopped.json()["status"] == "killed"


def test_deleting_a_session_kills_its_processes_even_mid_run(tmp_path: Path) -> None:
    with _native(tmp_path) as server, server.client() as alice:
        session_id = alice.post("/v1/sessions").json()["session_id"]
        alice.post(f"/v1/sessions/{session_id}/run", json={"code": "x = 1"})
        uid = _session_uid(server, session_id)
        assert _pids(uid)
        sock = _post_and_hang_up(server, f"/v1/sessions/{session_id}/run", {"code": LONG_CELL})
        _eventually(_started(server, session_id), "the long cell started")
        assert alice.delete(f"/v1/sessions/{session_id}").status_code == 204
        sock.close()
        _eventually(lambda: not _pids(uid), "the deleted session's processes are gone")
        assert alice.get(f"/v1/sessions/{session_id}").status_code == 404


def test_an_idle_session_is_closed_with_its_processes(tmp_path: Path) -> None:
    with _native(tmp_path, idle_seconds=1.0, sweep_seconds=0.1) as server, server.client() as alice:
        session_id = alice.post("/v1/sessions").json()["session_id"]
        alice.post(f"/v1/sessions/{session_id}/run", json={"code": "x = 1"})
        uid = _session_uid(server, session_id)
        assert _pids(uid)
        _eventually(
            lambda: alice.get(f"/v1/sessions/{session_id}").status_code == 404,
            "the idle session was closed",
        )
        assert not _pids(uid)
        # Its quota slot came back with it.
        assert server.app.runtime.ledger.usage("alice", Quota()).sessions == 0


def test_a_busy_cell_is_stopped_at_what_is_left_of_its_tokens_cpu_quota(tmp_path: Path) -> None:
    tokens = token_store(Quota(cpu_seconds=1.0))
    with _native(tmp_path, tokens=tokens) as server, server.client() as alice:
        session_id = alice.post("/v1/sessions").json()["session_id"]
        spin = "x = 0\nfor i in range(10**9):\n    x += i"  # minutes of CPU, if let run
        busy = alice.post(f"/v1/sessions/{session_id}/run", json={"code": spin})
        assert busy.status_code == 200
        body = busy.json()
        assert body["status"] == "timeout"  # the CPU limit, narrowed from the policy's 10 s
        assert body["outcome"]["decision"]["limits"]["cpu_seconds"] == 1.0
        over = alice.post(f"/v1/sessions/{session_id}/run", json={"code": "print(1)"})
        assert over.status_code == 429 and over.json()["error"] == "quota_cpu_seconds"


WAITS_FOR_FLAG = (
    "import os, time\n"
    "open('started', 'w').write('1')\n"
    "for _ in range(600):\n"
    "    if os.path.exists('flag.txt'):\n"
    "        break\n"
    "    time.sleep(0.05)\n"
    "print(open('flag.txt').read() if os.path.exists('flag.txt') else 'no flag')\n"
)


def test_file_operations_do_not_wait_for_a_running_cell(tmp_path: Path) -> None:
    with _native(tmp_path) as server, server.client() as alice:
        session_id = alice.post("/v1/sessions").json()["session_id"]
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(
                alice.post, f"/v1/sessions/{session_id}/run", json={"code": WAITS_FOR_FLAG}
            )
            _eventually(_started(server, session_id), "the waiting cell started")
            put = alice.put(f"/v1/sessions/{session_id}/files/flag.txt", content=b"from host")
            assert put.status_code == 204
            listed = alice.get(f"/v1/sessions/{session_id}/files").json()
            assert not running.done()  # answered while the cell still waits
            assert {"flag.txt", "started"} <= {e["name"] for e in listed}
            done = running.result(timeout=_BOUND_SECONDS)
        assert "--- stdout ---\nfrom host\n" in done.json()["observation"]["text"]
        # The file is the session's: a later cell may overwrite it.
        rewrite = {"code": "open('flag.txt', 'w').write('mine')\nprint(open('flag.txt').read())"}
        again = alice.post(f"/v1/sessions/{session_id}/run", json=rewrite)
        assert "--- stdout ---\nmine\n" in again.json()["observation"]["text"]
