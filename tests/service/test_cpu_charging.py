"""Every CPU-second a token's sessions burn is charged to the token: threads a cell leaves
burning are charged while the session idles, at delete, at the idle close and at shutdown; a
token whose quota is spent has its sessions stopped.

Real native sessions on a real server. The cell starts a thread that burns CPU and, once its
own ``thread_time`` passes ``_BURNT`` seconds, writes ``burnt`` in the workdir (and burns on):
the test waits for that file, so it knows at least ``_BURNT`` CPU-seconds were used outside
any run, and checks that the token was charged at least that much.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from service_support import RunningServer, serve, token_store

from safeexec.service.quotas import Quota

_BOUND_SECONDS = 60.0
_BURNT = 0.5

BURN_AND_RETURN = f"""
import threading, time

def burn():
    while time.thread_time() < {_BURNT}:
        pass
    open('burnt', 'w').write('1')
    while time.thread_time() < 60:
        pass

threading.Thread(target=burn, daemon=True).start()
print('left a thread burning')
"""


def _eventually(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + _BOUND_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {_BOUND_SECONDS}s: {what}")
        time.sleep(0.05)


def _native(tmp_path: Path, **config: object):  # type: ignore[no-untyped-def]
    return serve(tmp_path / "state", modes=("native",), **config)


def _charged(server: RunningServer) -> float:
    return server.app.runtime.ledger.usage("alice", Quota()).cpu_seconds


def _burn(server: RunningServer) -> str:
    """Open a session, leave a thread burning in it, wait until it burnt ``_BURNT`` seconds;
    the session id."""
    with server.client() as alice:
        session_id = alice.post("/v1/sessions").json()["session_id"]
        ran = alice.post(f"/v1/sessions/{session_id}/run", json={"code": BURN_AND_RETURN})
        assert ran.status_code == 200 and ran.json()["status"] == "ok", ran.text
        _eventually(
            lambda: alice.get(f"/v1/sessions/{session_id}/files/burnt").status_code == 200,
            "the thread the cell left burnt its first CPU-seconds",
        )
    return session_id


def test_cpu_burnt_after_the_last_run_is_charged_at_delete(tmp_path: Path) -> None:
    with _native(tmp_path, cpu_meter_seconds=3600.0) as server, server.client() as alice:
        session_id = _burn(server)
        assert _charged(server) < _BURNT  # the run itself was charged next to nothing
        assert alice.delete(f"/v1/sessions/{session_id}").status_code == 204
        assert _charged(server) >= _BURNT


def test_cpu_burnt_while_a_session_idles_is_charged_as_it_burns(tmp_path: Path) -> None:
    with _native(tmp_path, cpu_meter_seconds=0.2) as server:
        _burn(server)
        _eventually(lambda: _charged(server) >= _BURNT, "the idle burn was charged")


def test_cpu_burnt_before_the_idle_close_is_charged(tmp_path: Path) -> None:
    with (
        _native(tmp_path, cpu_meter_seconds=3600.0, idle_seconds=0.5, sweep_seconds=0.2) as server,
        server.client() as alice,
    ):
        # The file reads in _burn keep the session in use; it idles out after the last one.
        session_id = _burn(server)
        _eventually(
            lambda: alice.get(f"/v1/sessions/{session_id}").status_code == 404,
            "the idle session was closed",
        )
        _eventually(lambda: _charged(server) >= _BURNT, "its burn was charged at the close")


def test_cpu_burnt_before_shutdown_is_charged(tmp_path: Path) -> None:
    with _native(tmp_path, cpu_meter_seconds=3600.0) as server:
        _burn(server)
    assert _charged(server) >= _BURNT


def test_a_token_whose_quota_is_spent_has_its_sessions_stopped(tmp_path: Path) -> None:
    tokens = token_store(Quota(cpu_seconds=_BURNT))
    with (
        _native(tmp_path, tokens=tokens, cpu_meter_seconds=0.2) as server,
        server.client() as alice,
    ):
        session_id = alice.post("/v1/sessions").json()["session_id"]
        ran = alice.post(f"/v1/sessions/{session_id}/run", json={"code": BURN_AND_RETURN})
        assert ran.status_code == 200, ran.text
        _eventually(
            lambda: alice.get(f"/v1/sessions/{session_id}").status_code == 404,
            "the session of a token out of CPU was stopped",
        )
        assert _charged(server) >= _BURNT
        again = alice.post(f"/v1/sessions/{session_id}/run", json={"code": "print(1)"})
        assert again.status_code == 429 and again.json()["error"] == "quota_cpu_seconds"
        fresh = alice.post("/v1/sessions")
        assert fresh.status_code == 429 and fresh.json()["error"] == "quota_cpu_seconds"
