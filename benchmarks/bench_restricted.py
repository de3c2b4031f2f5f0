"""Restricted mode vs plain ``exec`` and the peers (smolagents' AST interpreter, asteval, stock
RestrictedPython with its documented guards), same programs, same run.

Every figure is a ratio against plain ``exec`` measured in this run (best of N repeats, each
compiling and running the program in a fresh namespace; a peer slower than a second per run is
run once or twice). Targets: restricted in-process <= 2x plain ``exec`` and >= 50x faster than
smolagents' interpreter, on every program. In-worker figures also include the
round trip to the confined worker, so they are shown against the native worker running the same
program with plain Python too. The last table compares a tool call through a capability (proxy →
gateway checks → host function → JSON copy back) with a direct Python call.

Run: ``.venv/bin/python benchmarks/bench_restricted.py``
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import peers
from figures import Figure, record

from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.backends.restricted import RestrictedBackend
from safeexec.blobs import BlobStore
from safeexec.capabilities import CapabilitySet, tool, tool_function
from safeexec.model import ExecRequest, ExecStatus, Limits
from safeexec.sandbox.restricted import OperationBudget, RestrictedExecutor

PROGRAMS: dict[str, str] = {
    "trivial call": "x = abs(-1) + 1\n",
    "200k-iteration loop": "total = 0\nfor i in range(200000):\n    total += i\n",
    "recursive fib(20)": (
        "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nresult = fib(20)\n"
    ),
    "string building 50k": (
        "parts = []\nfor i in range(50000):\n    parts.append(str(i) + ',')\n"
        "text = ''.join(parts)\n"
    ),
    "class method calls": (
        "class Counter:\n"
        "    def __init__(self):\n"
        "        self.count = 0\n"
        "        self._calls = 0\n"
        "    def add(self, k):\n"
        "        self.count += k\n"
        "        self._calls += 1\n"
        "        return self.count\n"
        "c = Counter()\n"
        "for i in range(100000):\n"
        "    c.add(i)\n"
    ),
}

LIMITS = Limits(cpu_seconds=60, wall_seconds=120)


def best_of(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def interleaved_best(runners: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Best time of each runner, measured round-robin so load changes hit every column alike."""
    best = dict.fromkeys(runners, float("inf"))
    for _ in range(repeats):
        for label, run in runners.items():
            best[label] = min(best[label], best_of(run, 1))
    return best


def plain_exec(code: str) -> Callable[[], object]:
    def run() -> object:
        namespace: dict[str, object] = {"__builtins__": __builtins__}
        exec(compile(code, "<bench>", "exec"), namespace)
        return namespace

    return run


def restricted_in_process(code: str, *, counting: bool) -> Callable[[], object]:
    """One persistent executor, as a session keeps it; every run compiles the code afresh."""
    executor = RestrictedExecutor(count_operations=counting)

    def run() -> object:
        budget = OperationBudget(10**12) if counting else None
        return executor.execute(code, filename="<bench>", budget=budget)

    return run


def worker_runner(session: object) -> Callable[[str], Callable[[], object]]:
    def make(code: str) -> Callable[[], object]:
        def run() -> object:
            result = session.run(ExecRequest(action_id="bench", code=code, limits=LIMITS))  # type: ignore[attr-defined]
            if result.status is not ExecStatus.OK:
                raise RuntimeError(f"worker run failed: {result.message}")
            return result

        return run

    return make


PEERS: dict[str, Callable[[str], Callable[[], object]]] = {
    "stock RestrictedPython": peers.stock_restricted_runner,
    "asteval": peers.asteval_runner,
    "smolagents LocalPythonExecutor": peers.smolagents_runner,
}


def peer_seconds(make: Callable[[str], Callable[[], object]], code: str, repeats: int) -> float:
    """Best time of a peer; one that takes over a second per run is run at most twice."""
    try:
        run = make(code)
    except peers.Unsupported:
        return float("nan")
    first = best_of(run, 1)
    return min(first, best_of(run, repeats - 1 if first < 1.0 else 1))


def main() -> None:
    repeats = 7
    tmp = Path(tempfile.mkdtemp(prefix="bench-restricted-"))
    blobs = BlobStore(tmp / "blobs")
    workers: dict[str, Callable[[str], Callable[[], object]]] = {}
    sessions = []
    for label, backend in (
        ("restricted in worker", RestrictedBackend()),
        ("native worker (plain Python)", NativeBackend(executor="python")),
    ):
        workdir = tmp / label.replace(" ", "-")
        workdir.mkdir()
        session = backend.open(SessionSpec(workdir=workdir, limits=LIMITS, blobs=blobs))
        sessions.append(session)
        workers[label] = worker_runner(session)

    columns = [
        "restricted in-process",
        "restricted in-process (no op budget)",
        *workers,
        *PEERS,
    ]
    header = f"{'program':<22} {'plain exec':>11} " + " ".join(f"{c:>24}" for c in columns)
    print("times as ratios to plain exec (n/a: the peer cannot run the program)")
    print(header)
    print("-" * len(header))
    ratios: dict[str, list[float]] = {c: [] for c in columns}
    figures: list[Figure] = []
    for name, code in PROGRAMS.items():
        runners: dict[str, Callable[[], object]] = {
            "plain exec": plain_exec(code),
            "restricted in-process": restricted_in_process(code, counting=True),
            "restricted in-process (no op budget)": restricted_in_process(code, counting=False),
        }
        for label, make in workers.items():
            runners[label] = make(code)
        measured = interleaved_best(runners, repeats)
        for label, make in PEERS.items():
            measured[label] = peer_seconds(make, code, repeats)
        base = measured["plain exec"]
        cells = []
        for column in columns:
            ratio = measured[column] / base
            ratios[column].append(ratio)
            cells.append(f"{ratio:>23.2f}x" if ratio == ratio else f"{'n/a':>24}")
        print(f"{name:<22} {base * 1000:>9.3f}ms " + " ".join(cells))
        ours = measured["restricted in-process"]
        figures.append(
            Figure(
                figure=f"restricted in-process: {name}",
                peer_name="plain `exec`",
                safeexec=ours,
                peer=base,
                unit="s",
                bound="at_most",
                limit=2.0,
            )
        )
        for label in PEERS:
            if measured[label] == measured[label]:
                smol = label.startswith("smolagents")
                figures.append(
                    Figure(
                        figure=f"restricted in-process: {name}",
                        peer_name=label,
                        safeexec=ours,
                        peer=measured[label],
                        unit="s",
                        bound="at_most" if smol else "none",
                        limit=0.02 if smol else 0.0,  # >= 50x faster
                    )
                )
    print("\nrestricted in worker / native worker running plain Python:")
    for name, a, b in zip(
        PROGRAMS,
        ratios["restricted in worker"],
        ratios["native worker (plain Python)"],
        strict=True,
    ):
        print(f"  {name:<22} {a / b:.2f}x")
    print("\nhow many times faster restricted in-process is than each peer:")
    for label in PEERS:
        cells = [
            f"{p / r:.1f}x" if p == p else "n/a"
            for p, r in zip(ratios[label], ratios["restricted in-process"], strict=True)
        ]
        print(f"  {label:<32} " + "  ".join(f"{c:>8}" for c in cells))

    bench_tool_calls(blobs, tmp)
    for session in sessions:
        session.close()
    record(figures, source="bench_restricted")


def bench_tool_calls(blobs: BlobStore, tmp: Path) -> None:
    def lookup(key: str, count: int = 1) -> dict[str, object]:
        return {"key": key, "count": count}

    spec = tool(lookup)
    calls = 2000
    direct = best_of(lambda: [lookup("k", count=i) for i in range(calls)], 5) / calls
    caps = CapabilitySet()
    caps.grant(spec)
    (descriptor,) = caps.describe()
    proxy = tool_function(descriptor, caps.invoke)
    gateway = best_of(lambda: [proxy("k", count=i) for i in range(calls)], 5) / calls
    code = f"for i in range({calls}):\n    lookup('k', count=i)\n"
    in_process = RestrictedBackend(in_process=True).open(
        SessionSpec(workdir=tmp / "tools-in-process", limits=LIMITS, blobs=blobs, tools=caps)
    )
    rows = [("direct Python call", direct), ("proxy → gateway → host (same process)", gateway)]
    rows.append(
        (
            "restricted in-process code calling the tool",
            best_of(lambda: in_process.run(ExecRequest(action_id="t", code=code, limits=LIMITS)), 3)
            / calls,
        )
    )
    in_process.close()
    try:
        (tmp / "tools-worker").mkdir()
        worker = RestrictedBackend().open(
            SessionSpec(workdir=tmp / "tools-worker", limits=LIMITS, blobs=blobs, tools=caps)
        )
        rows.append(
            (
                "restricted in worker (channel round trip)",
                best_of(lambda: worker.run(ExecRequest(action_id="t", code=code, limits=LIMITS)), 3)
                / calls,
            )
        )
        worker.close()
    except Exception as exc:
        print(f"(in-worker tool figures unavailable: {type(exc).__name__})")
    print(f"\ntool call round trip ({calls} calls; per call, ratio to a direct Python call):")
    for label, seconds in rows:
        print(f"  {label:<46} {seconds * 1e6:>9.2f}us {seconds / direct:>9.1f}x")


if __name__ == "__main__":
    sys.setrecursionlimit(10_000)
    main()
