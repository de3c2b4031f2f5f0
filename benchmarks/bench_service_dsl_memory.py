"""The server's memory while DSL programs try to grow values (loopback only; it stops by itself).

Starts ``safeexec serve --mode dsl`` on 127.0.0.1, opens DSL sessions with a 64 MiB memory limit
and runs programs that grow text or collections through every value-producing construct (each
past the policy's caps, several in ways that once made the server itself allocate gigabytes: an
f-string doubling its text, a number format with a ten-billion-digit precision, a shared list
shown as 2**60 leaves). Every program must stop at its cap (a limit status) or be refused, and
the **server process's peak RSS** (``VmHWM``, so a transient allocation counts) may grow by at
most ``--bound-mib`` (default 64, the sessions' own memory limit) over its peak after a warm-up
run of the same kind. Figures are ratios against that warm-up baseline, measured in the same run.

Run: ``.venv/bin/python benchmarks/bench_service_dsl_memory.py [--rounds N] [--bound-mib M]``.
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

MIB = 1024 * 1024
SESSION_MEMORY_BYTES = 64 * MIB

# Each grows past the default [dsl] caps (1,000,000 characters, 1000 items) or is refused.
PROGRAMS = {
    "f-string doubling": 's = "ab"\nfor i in range(40):\n    s = f"{s}{s}"\nreturn len(s)',
    "format precision": 'return f"{1.5:.9999999999f}"',
    "format width, many": (
        'xs = map(range(1000), lambda i: f"{i:999d}{i:999d}")\nreturn len(join(xs, ""))'
    ),
    "concatenation": 's = "ab"\nfor i in range(40):\n    s += s\nreturn len(s)',
    "list concatenation": "xs = [1]\nfor i in range(40):\n    xs += xs\nreturn len(xs)",
    "join": 'return len(join(map(range(1000), lambda i: "' + "x" * 2000 + '"), ""))',
    "replace, empty old": 's = "abcdefghij"\nfor i in range(10):\n    s = replace(s, "", s)\n'
    "return len(s)",
    "shared list shown": "x = [1]\nfor i in range(60):\n    x = [x, x]\nreturn x",
    "shared list in an f-string": 'x = [1]\nfor i in range(60):\n    x = [x, x]\nreturn f"{x}"',
    "shared list as str": "x = [1]\nfor i in range(60):\n    x = [x, x]\nreturn len(str(x))",
    "shared list printed": "x = [1]\nfor i in range(60):\n    x = [x, x]\nprint(x)\nreturn 1",
    "range": "n = 1000 * 1000\nreturn len(range(n))",
    "upper": 's = "ÿ"\nfor i in range(20):\n    s = s + s\nreturn len(upper(s))',
    "repetition": 'return "x" * 1000000000',
}
WARM_UP = 'xs = map(range(500), lambda i: f"{i:>8d}")\nreturn len(join(xs, ","))'


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} for pid {pid}")


@dataclass(frozen=True, slots=True)
class Server:
    process: subprocess.Popen[bytes]
    client: httpx.Client

    def peak_rss(self) -> int:
        return _status_kib(self.process.pid, "VmHWM") * 1024

    def rss(self) -> int:
        return _status_kib(self.process.pid, "VmRSS") * 1024


@contextmanager
def serving(state: Path) -> Iterator[Server]:
    token = secrets.token_hex(16)
    port = _free_port()
    env = {**os.environ, "SAFEEXEC_SERVICE_TOKENS": f"bench={token}"}
    argv = [sys.executable, "-c", "from safeexec.cli.app import main; main()", "serve"]
    argv += ["--host", "127.0.0.1"]
    argv += ["--port", str(port), "--state-dir", str(state), "--mode", "dsl"]
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    client = httpx.Client(
        base_url=f"http://127.0.0.1:{port}",
        headers={"Authorization": f"Bearer {token}"},
        timeout=120.0,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if client.get("/v1/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.1)
        yield Server(process=process, client=client)
    finally:
        client.close()
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


def _run(server: Server, code: str) -> str:
    """Run ``code`` in a fresh DSL session; its status (or the verdict when it did not run)."""
    created = server.client.post(
        "/v1/sessions", json={"mode": "dsl", "limits": {"memory_bytes": SESSION_MEMORY_BYTES}}
    )
    created.raise_for_status()
    session = created.json()["session_id"]
    try:
        reply = server.client.post(f"/v1/sessions/{session}/run", json={"code": code})
        reply.raise_for_status()
        body = reply.json()
        return str(body["status"] or body["verdict"])
    finally:
        server.client.delete(f"/v1/sessions/{session}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bound-mib", type=float, default=SESSION_MEMORY_BYTES / MIB)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="safeexec-bench-dsl-memory-") as work,
        serving(Path(work) / "state") as server,
    ):
        for _ in range(args.rounds):
            assert _run(server, WARM_UP) == "ok"
        baseline = server.peak_rss()
        statuses: dict[str, set[str]] = {name: set() for name in PROGRAMS}
        started = time.monotonic()
        for _ in range(args.rounds):
            for name, code in PROGRAMS.items():
                statuses[name].add(_run(server, code))
        seconds = time.monotonic() - started
        peak, now = server.peak_rss(), server.rss()
    bound = int(args.bound_mib * MIB)
    print(f"{'program':<28} status")
    for name, seen in statuses.items():
        print(f"{name:<28} {', '.join(sorted(seen))}")
    runs = args.rounds * len(PROGRAMS)
    print(f"\n{runs} runs in {seconds:.1f} s; server peak RSS (VmHWM), against the warm-up peak:")
    print(f"  warm-up peak {baseline / MIB:8.1f} MiB  1.00x")
    print(f"  after runs   {peak / MIB:8.1f} MiB  {peak / baseline:.2f}x")
    print(f"  RSS now      {now / MIB:8.1f} MiB  {now / baseline:.2f}x")
    print(f"  growth       {(peak - baseline) / MIB:8.1f} MiB  (bound {bound / MIB:.0f} MiB)")
    stopped = {"limit_exceeded", "deny"}
    bad = {name: seen for name, seen in statuses.items() if not seen <= stopped}
    if bad:
        raise SystemExit(f"programs not stopped at their caps: {bad}")
    if peak - baseline > bound:
        raise SystemExit(f"the server grew by {(peak - baseline) / MIB:.1f} MiB, over the bound")


if __name__ == "__main__":
    main()
