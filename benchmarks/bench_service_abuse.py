"""The HTTP service under well-behaved load beside hostile clients (loopback only; it stops by
itself).

One server (in this process, native sessions) with a small connection budget. Well-behaved
clients — ``GOOD_TOKENS`` tokens x ``SESSIONS_PER_TOKEN`` sessions, each making ``RUNS`` trivial
runs — are measured twice: alone, then beside hostile clients of six classes that run until the
well-behaved ones are done: idle sockets (more than the server's ``max_connections``), slow
headers, slow bodies, cells that leave threads burning and are deleted, abandoned event
streams, oversized bodies. It prints the well-behaved success rate and p50/p99 run latency of
both runs (the hostile run's as a ratio to the run alone), and what each hostile class got.

Each class binds its own 127.0.0.x source addresses (all of 127/8 is loopback), so the
per-address cap sees distinct clients, as it would on a network.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event as EventType
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "service"))

from service_support import serve

from safeexec.service.auth import TokenEntry, TokenStore, hash_token
from safeexec.service.quotas import Quota

GOOD_TOKENS = 4
SESSIONS_PER_TOKEN = 2
RUNS = 15
TRIVIAL = "x = sum(range(1000))\n"
DEADLINE_SECONDS = 240.0
"""Every phase ends by this bound whatever happens."""

SERVER = {
    "modes": ("native",),
    "max_connections": 64,
    "head_timeout_seconds": 2.0,
    "body_timeout_seconds": 3.0,
    "idle_seconds": 4.0,
    "sweep_seconds": 0.5,
    "cpu_meter_seconds": 0.5,
}
IDLE_SOCKETS = 96  # past max_connections
SLOW_HEADERS = 10
SLOW_BODIES = 5
BURNERS = 2
STREAMS = 2
OVERSIZED = 2
BURN_QUOTA_SECONDS = 3.0
BURN = """
import os, threading, time

def burn():
    while time.thread_time() < 20:
        pass

def report():  # the worker's own CPU-seconds, all threads, for the benchmark to read
    for _ in range(2000):
        with open('cpu.tmp', 'w') as out:
            out.write(repr(time.process_time()))
        os.replace('cpu.tmp', 'cpu')
        time.sleep(0.05)

for _ in range(2):
    threading.Thread(target=burn, daemon=True).start()
threading.Thread(target=report, daemon=True).start()
"""


def _token(name: str) -> str:
    return f"{name}-token-0123456789abcdef0123"


def _tokens() -> TokenStore:
    good = [f"good{i}" for i in range(GOOD_TOKENS)]
    hostile = ["h-body", "h-burn", "h-stream", "h-big"]
    return TokenStore(
        [
            TokenEntry(
                token_id=name,
                sha256=hash_token(_token(name)),
                quota=Quota(cpu_seconds=BURN_QUOTA_SECONDS) if name == "h-burn" else Quota(),
            )
            for name in (*good, *hostile)
        ]
    )


@dataclass(frozen=True)
class Target:
    """Where the server listens (all a client process needs to know)."""

    base_url: str
    port: int


@dataclass
class Good:
    latencies: list[float] = field(default_factory=list)
    ok: int = 0
    failed: Counter[str] = field(default_factory=Counter)

    @property
    def attempted(self) -> int:
        return self.ok + sum(self.failed.values())


@dataclass
class Hostile:
    """What each hostile class did and got."""

    attempts: Counter[str] = field(default_factory=Counter)
    served: Counter[str] = field(default_factory=Counter)
    burnt_cpu: float = 0.0
    stream_sessions: list[str] = field(default_factory=list)


def _client(server: Target, name: str, source: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=server.base_url,
        headers={"Authorization": f"Bearer {_token(name)}"},
        timeout=60.0,
        transport=httpx.AsyncHTTPTransport(local_address=source, retries=0),
    )


async def _well_behaved(server: Target, name: str, source: str, into: Good) -> None:
    async with _client(server, name, source) as client:
        try:
            opened = await client.post("/v1/sessions")
        except httpx.HTTPError as exc:
            into.failed[type(exc).__name__] += RUNS
            return
        if opened.status_code != 201:
            into.failed[f"create {opened.status_code}"] += RUNS
            return
        session_id = opened.json()["session_id"]
        for _ in range(RUNS):
            started = time.monotonic()
            try:
                ran = await client.post(f"/v1/sessions/{session_id}/run", json={"code": TRIVIAL})
            except httpx.HTTPError as exc:
                into.failed[type(exc).__name__] += 1
                continue
            if ran.status_code == 200 and ran.json()["status"] == "ok":
                into.ok += 1
                into.latencies.append(time.monotonic() - started)
            else:
                into.failed[f"run {ran.status_code}"] += 1
        with contextlib.suppress(httpx.HTTPError):
            await client.delete(f"/v1/sessions/{session_id}")


async def _good_load(server: Target) -> Good:
    good = Good()
    clients = [
        _well_behaved(server, f"good{t}", f"127.0.0.{10 + t * SESSIONS_PER_TOKEN + s}", good)
        for t in range(GOOD_TOKENS)
        for s in range(SESSIONS_PER_TOKEN)
    ]
    await asyncio.wait_for(asyncio.gather(*clients), DEADLINE_SECONDS)
    return good


async def _connect(
    server: Target, source: str
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", server.port, local_addr=(source, 0))


async def _until_closed(reader: asyncio.StreamReader) -> bytes:
    data = b""
    while chunk := await reader.read(65536):
        data += chunk
    return data


async def _idle_socket(server: Target, source: str, stop: asyncio.Event, h: Hostile) -> None:
    """Open a connection, send nothing; when it is closed, open another."""
    while not stop.is_set():
        h.attempts["idle sockets"] += 1
        with contextlib.suppress(OSError):
            reader, writer = await _connect(server, source)
            got = await _waiting(_until_closed(reader), stop)
            if got:
                h.served["idle sockets"] += 1
            writer.close()
        await asyncio.sleep(0.05)


async def _slow_header(server: Target, source: str, stop: asyncio.Event, h: Hostile) -> None:
    """Send a request head one byte every half second; count any answer."""
    while not stop.is_set():
        h.attempts["slow headers"] += 1
        with contextlib.suppress(OSError):
            reader, writer = await _connect(server, source)
            writer.write(b"GET /v1/health HTTP/1.1\r\nHost: t\r\nX-Pad: ")
            while not stop.is_set() and not reader.at_eof():
                writer.write(b"a")
                with contextlib.suppress(OSError):
                    await writer.drain()
                with contextlib.suppress(asyncio.TimeoutError):
                    if await asyncio.wait_for(reader.read(65536), 0.5):
                        h.served["slow headers"] += 1
            writer.close()


async def _slow_body(server: Target, source: str, stop: asyncio.Event, h: Hostile) -> None:
    """An authenticated upload of 1 MB at 100 bytes every half second; count any answer that
    is not the connection closing."""
    head = (
        f"PUT /v1/sessions/none/files/a HTTP/1.1\r\nHost: t\r\n"
        f"Authorization: Bearer {_token('h-body')}\r\nContent-Length: 1000000\r\n\r\n"
    ).encode()
    while not stop.is_set():
        h.attempts["slow bodies"] += 1
        with contextlib.suppress(OSError):
            reader, writer = await _connect(server, source)
            writer.write(head)
            while not stop.is_set() and not reader.at_eof():
                writer.write(b"b" * 100)
                with contextlib.suppress(OSError):
                    await writer.drain()
                with contextlib.suppress(asyncio.TimeoutError):
                    if await asyncio.wait_for(reader.read(65536), 0.5):
                        h.served["slow bodies"] += 1
            writer.close()


async def _burner(server: Target, source: str, stop: asyncio.Event, h: Hostile) -> None:
    """Open a session, leave two threads burning, delete it a second later; again."""
    async with _client(server, "h-burn", source) as client:
        while not stop.is_set():
            h.attempts["burn then delete"] += 1
            opened = await client.post("/v1/sessions")
            if opened.status_code != 201:
                await asyncio.sleep(0.5)  # out of quota: a 429, as it should be
                continue
            session_id = opened.json()["session_id"]
            ran = await client.post(f"/v1/sessions/{session_id}/run", json={"code": BURN})
            if ran.status_code == 200 and ran.json()["status"] == "ok":
                h.served["burn then delete"] += 1
            await asyncio.sleep(1.0)
            # What the worker says it used, read just before the delete (a lower bound).
            used = await client.get(f"/v1/sessions/{session_id}/files/cpu")
            if used.status_code == 200:
                h.burnt_cpu += float(used.text)
            await client.delete(f"/v1/sessions/{session_id}")


async def _abandoned_stream(server: Target, source: str, stop: asyncio.Event, h: Hostile) -> None:
    """Open a session and its event stream, then never read or use either."""
    async with _client(server, "h-stream", source) as client:
        h.attempts["abandoned streams"] += 1
        opened = await client.post("/v1/sessions")
        session_id = opened.json()["session_id"]
        h.stream_sessions.append(session_id)
    _, writer = await _connect(server, source)
    writer.write(
        f"GET /v1/sessions/{session_id}/events HTTP/1.1\r\nHost: t\r\n"
        f"Authorization: Bearer {_token('h-stream')}\r\n\r\n".encode()
    )
    await stop.wait()
    writer.close()


async def _oversized(server: Target, source: str, stop: asyncio.Event, h: Hostile) -> None:
    """Runs with an 8 MiB body (the limit is 4 MiB); count any that was taken."""
    body = b'{"code": "' + b"x" * (8 << 20) + b'"}'
    async with _client(server, "h-big", source) as client:
        while not stop.is_set():
            h.attempts["oversized bodies"] += 1
            with contextlib.suppress(httpx.HTTPError):
                answer = await client.post(
                    "/v1/sessions/none/run",
                    content=body,
                    headers={"content-type": "application/json"},
                )
                if answer.status_code != 413:
                    h.served["oversized bodies"] += 1
            await asyncio.sleep(0.2)


async def _waiting(work: Awaitable[bytes], stop: asyncio.Event) -> bytes:
    """``work``'s result, or b"" once ``stop`` is set first."""
    task = asyncio.ensure_future(work)
    stopper = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    stopper.cancel()
    if task in done:
        return task.result()
    task.cancel()
    return b""


Attack = Callable[[Target, str, asyncio.Event, Hostile], Awaitable[None]]


async def _hostiles(server: Target, stop: Callable[[], bool], hostile: Hostile) -> None:
    """Every hostile class at once, until ``stop()``."""
    stopping = asyncio.Event()
    plan: list[tuple[Attack, int, int]] = [
        (_idle_socket, IDLE_SOCKETS, 100),
        (_slow_header, SLOW_HEADERS, 110),
        (_slow_body, SLOW_BODIES, 120),
        (_burner, BURNERS, 130),
        (_abandoned_stream, STREAMS, 140),
        (_oversized, OVERSIZED, 150),
    ]
    tasks = [
        asyncio.ensure_future(attack(server, f"127.0.{subnet}.{1 + i % 4}", stopping, hostile))
        for attack, count, subnet in plan
        for i in range(count)
    ]
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not stop() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    stopping.set()
    await asyncio.wait(tasks, timeout=30.0)


def _hostile_process(server: Target, stop: EventType, results: Queue[Hostile]) -> None:
    """The hostile clients in a process of their own (as they would be on other machines: they
    do not share the server's interpreter lock); what they got goes to ``results``."""
    hostile = Hostile()
    asyncio.run(_hostiles(server, stop.is_set, hostile))
    results.put(hostile)


def _with_hostiles(server: Target) -> tuple[Good, Hostile]:
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    results: Queue[Hostile] = context.Queue()
    process = context.Process(target=_hostile_process, args=(server, stop, results))
    process.start()
    try:
        time.sleep(5.0)  # the hostiles are in place first (the process starts from scratch)
        good = asyncio.run(_good_load(server))
    finally:
        stop.set()
    hostile = results.get(timeout=DEADLINE_SECONDS)
    process.join(DEADLINE_SECONDS)
    return good, hostile


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _line(label: str, good: Good, base: Good | None) -> str:
    rate = 100.0 * good.ok / max(1, good.attempted)
    p50, p99 = _percentile(good.latencies, 0.5), _percentile(good.latencies, 0.99)
    if base is None:
        ratio = "1.00x / 1.00x"
    else:
        b50, b99 = _percentile(base.latencies, 0.5), _percentile(base.latencies, 0.99)
        ratio = f"{p50 / b50:.2f}x / {p99 / b99:.2f}x"
    return (
        f"| {label} | {good.ok}/{good.attempted} ({rate:.1f} %) | {p50 * 1000:.0f} ms | "
        f"{p99 * 1000:.0f} ms | {ratio} |"
    )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="safeexec-bench-abuse-") as work:
        with serve(Path(work) / "alone", tokens=_tokens(), **SERVER) as server:
            alone = asyncio.run(_good_load(Target(server.base_url, server.port)))
        with serve(Path(work) / "hostile", tokens=_tokens(), **SERVER) as server:
            beside, hostile = _with_hostiles(Target(server.base_url, server.port))
            time.sleep(SERVER["idle_seconds"] + 1.0)  # type: ignore[operator]
            runtime = server.app.runtime
            streams_alive = sum(
                1 for r in runtime.registry.all() if r.session_id in hostile.stream_sessions
            )
            charged = runtime.ledger.usage("h-burn", Quota()).cpu_seconds
            closed = dict(server.guard.closed_by_rule)
        burnt = hostile.burnt_cpu
    print(
        f"{GOOD_TOKENS} tokens x {SESSIONS_PER_TOKEN} sessions x {RUNS} runs; server "
        f"max_connections={SERVER['max_connections']}, head/body timeouts "
        f"{SERVER['head_timeout_seconds']}/{SERVER['body_timeout_seconds']} s\n"
    )
    print("| well-behaved clients | success | p50 | p99 | p50 / p99 vs alone |")
    print("|---|---|---|---|---|")
    print(_line("alone", alone, None))
    print(_line("beside hostile clients", beside, alone))
    print()
    print("| hostile class | attempts | what it got |")
    print("|---|---|---|")
    a, s = hostile.attempts, hostile.served
    print(
        f"| idle sockets ({IDLE_SOCKETS}) | {a['idle sockets']} connections | "
        f"{s['idle sockets']} answers; closed: {closed.get('head_timeout', 0)} head timeouts "
        f"(all classes), {closed.get('evicted', 0)} evicted for newcomers |"
    )
    print(
        f"| slow headers ({SLOW_HEADERS}) | {a['slow headers']} connections | "
        f"{s['slow headers']} answers |"
    )
    print(
        f"| slow bodies ({SLOW_BODIES}) | {a['slow bodies']} connections | "
        f"{s['slow bodies']} answers; {closed.get('body_timeout', 0)} closed by the body timeout |"
    )
    print(
        f"| burn then delete ({BURNERS}) | {a['burn then delete']} sessions "
        f"({s['burn then delete']} ran) | {burnt:.2f} CPU-s burnt (read before each delete), "
        f"{charged:.2f} charged, "
        f"{max(0.0, burnt - charged):.2f} uncharged; quota {BURN_QUOTA_SECONDS} s |"
    )
    print(
        f"| abandoned streams ({STREAMS}) | {a['abandoned streams']} sessions | "
        f"{streams_alive} still open {SERVER['idle_seconds']} s after their last use |"
    )
    print(
        f"| oversized bodies ({OVERSIZED}) | {a['oversized bodies']} requests | "
        f"{s['oversized bodies']} taken (every one a 413) |"
    )
    if beside.failed or alone.failed:
        print(f"\nfailures: alone {dict(alone.failed)}, beside {dict(beside.failed)}")


if __name__ == "__main__":
    main()
