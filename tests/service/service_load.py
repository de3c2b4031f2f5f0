"""The bounded load driver shared by ``test_load.py`` and ``benchmarks/bench_service.py``.

``clients`` concurrent clients (asyncio + httpx, loopback only) each open a session, make
``runs`` trivial runs and delete the session; the whole load stops by itself after that count or
at ``deadline_seconds``, whichever comes first. A direct ``Session.run`` of the same code in this
process is the baseline, measured in the same run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil

from safeexec import Session
from safeexec.model.values import Action
from safeexec.service.auth import hash_token

TRIVIAL = "x = 1\n"
LOAD_TOKEN = "load-token-0123456789abcdef0123"


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadReport:
    clients: int
    runs_per_client: int
    completed: int
    errors: tuple[str, ...]
    seconds: float
    unloaded_p50: float
    service_p50: float
    service_p99: float
    direct_p50: float
    direct_p99: float
    server_rss_before: int
    server_rss_after: int

    @property
    def throughput(self) -> float:
        return self.completed / self.seconds if self.seconds else 0.0

    def table(self) -> str:
        mib = 1024 * 1024
        rows = [
            ("clients x runs", f"{self.clients} x {self.runs_per_client}"),
            ("runs completed", f"{self.completed}"),
            ("errors", f"{len(self.errors)}"),
            ("throughput", f"{self.throughput:.1f} runs/s"),
            ("throughput / direct serial", f"{self.throughput * self.direct_p50:.2f}x"),
            ("p50 one client / direct", f"{self.unloaded_p50 / self.direct_p50:.2f}x"),
            ("p50 service / direct", f"{self.service_p50 / self.direct_p50:.2f}x"),
            ("p99 service / direct", f"{self.service_p99 / self.direct_p99:.2f}x"),
            ("p99 / p50 (service)", f"{self.service_p99 / self.service_p50:.2f}x"),
            ("server RSS after / before", f"{self.server_rss_after / self.server_rss_before:.2f}x"),
            (
                "server RSS before, after",
                f"{self.server_rss_before / mib:.0f} MiB, {self.server_rss_after / mib:.0f} MiB",
            ),
        ]
        width = max(len(name) for name, _ in rows)
        return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def direct_latencies(runs: int) -> list[float]:
    with (
        tempfile.TemporaryDirectory(prefix="safeexec-load-") as scratch,
        Session(policy="default", state_dir=Path(scratch) / "state") as session,
    ):
        # run_action: the entry point the service calls for {"code": ...}.
        session.run_action(Action.create(TRIVIAL))  # warm: the worker is forked once
        seen = []
        for _ in range(runs):
            started = time.perf_counter()
            session.run_action(Action.create(TRIVIAL))
            seen.append(time.perf_counter() - started)
        return seen


async def _client(
    http: httpx.AsyncClient, runs: int, latencies: list[float], errors: list[str]
) -> None:
    created = await http.post("/v1/sessions")
    if created.status_code != 201:
        errors.append(f"create: {created.status_code} {created.text[:200]}")
        return
    session_id = created.json()["session_id"]
    try:
        for _ in range(runs):
            started = time.perf_counter()
            reply = await http.post(f"/v1/sessions/{session_id}/run", json={"code": TRIVIAL})
            elapsed = time.perf_counter() - started
            if reply.status_code != 200 or reply.json()["status"] != "ok":
                errors.append(f"run: {reply.status_code} {reply.text[:200]}")
            else:
                latencies.append(elapsed)
    finally:
        await http.delete(f"/v1/sessions/{session_id}")


async def _load(
    url: str, clients: int, runs: int, deadline_seconds: float
) -> tuple[list[float], list[str], float]:
    latencies: list[float] = []
    errors: list[str] = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(
        base_url=url,
        headers={"Authorization": f"Bearer {LOAD_TOKEN}"},
        timeout=deadline_seconds,
        limits=limits,
    ) as http:
        started = time.perf_counter()
        tasks = [
            asyncio.create_task(_client(http, runs, latencies, errors)) for _ in range(clients)
        ]
        done, pending = await asyncio.wait(tasks, timeout=deadline_seconds)
        for task in pending:
            task.cancel()
            errors.append("a client did not finish before the deadline")
        for task in done:
            if task.exception() is not None:
                errors.append(f"client failed: {task.exception()!r}")
        return latencies, errors, time.perf_counter() - started


def _rss(pid: int) -> int:
    """The server process's own resident memory (its sandboxes are separate processes)."""
    return int(psutil.Process(pid).memory_info().rss)


@contextlib.contextmanager
def load_server(state_dir: Path, *, clients: int) -> Iterator[tuple[str, int]]:
    """A ``safeexec serve`` process on a free loopback port whose load token may hold
    ``clients`` sessions and runs at once; yields (url, pid)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    tokens = state_dir.parent / "tokens.toml"
    tokens.write_text(
        f'[tokens.load]\nsha256 = "{hash_token(LOAD_TOKEN)}"\n'
        f"max_sessions = {clients}\nmax_concurrent_runs = {clients}\n"
    )
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    command = [str(Path(sys.executable).with_name("safeexec")), "serve", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--tokens", str(tokens), "--state-dir", str(state_dir)]
    command += ["--mode", "native"]
    log_path = state_dir.parent / "server.log"
    log = log_path.open("ab")
    process = subprocess.Popen(command, stdout=log, stderr=log, env=dict(os.environ))
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                log.flush()
                raise RuntimeError(f"the load server did not start:\n{log_path.read_text()}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                    break
            time.sleep(0.05)
        yield url, process.pid
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=60)
        log.close()


def run_load(
    work: Path, *, clients: int = 50, runs: int = 20, deadline_seconds: float = 600.0
) -> LoadReport:
    """The load on a fresh server process, and the direct baseline, in one go."""
    direct = direct_latencies(max(100, runs * 5))
    with load_server(work / "state", clients=clients) as (url, pid):
        # One client alone first: it warms the template and shows the service's own overhead.
        unloaded, warm_errors, _ = asyncio.run(_load(url, 1, 50, deadline_seconds))
        before = _rss(pid)
        latencies, errors, seconds = asyncio.run(_load(url, clients, runs, deadline_seconds))
        after = _rss(pid)
    return LoadReport(
        clients=clients,
        runs_per_client=runs,
        completed=len(latencies),
        errors=tuple(warm_errors + errors),
        seconds=seconds,
        unloaded_p50=statistics.median(unloaded[1:]) if len(unloaded) > 1 else float("nan"),
        service_p50=statistics.median(latencies) if latencies else float("nan"),
        service_p99=_percentile(latencies, 0.99) if latencies else float("nan"),
        direct_p50=statistics.median(direct),
        direct_p99=_percentile(direct, 0.99),
        server_rss_before=before,
        server_rss_after=after,
    )
