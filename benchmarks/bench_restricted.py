"""Restricted mode vs plain ``exec`` (and smolagents' AST interpreter when installed), same run.

Every figure is a ratio against plain ``exec`` measured in this run (best of N repeats, each
compiling and running the program in a fresh namespace). In-worker figures also include the
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


def smolagents_runner() -> Callable[[str], Callable[[], object]] | None:
    try:
        from smolagents.local_python_executor import LocalPythonExecutor
    except ImportError:
        return None

    def make(code: str) -> Callable[[], object]:
        def run() -> object:
            executor = LocalPythonExecutor(
                additional_authorized_imports=[], max_print_outputs_length=10**6
            )
            executor.send_tools({})
            return executor(code)

        return run

    return make


def worker_runner(session: object) -> Callable[[str], Callable[[], object]]:
    def make(code: str) -> Callable[[], object]:
        def run() -> object:
            result = session.run(ExecRequest(action_id="bench", code=code, limits=LIMITS))  # type: ignore[attr-defined]
            if result.status is not ExecStatus.OK:
                raise RuntimeError(f"worker run failed: {result.message}")
            return result

        return run

    return make


def main() -> None:
    repeats = 7
    tmp = Path(tempfile.mkdtemp(prefix="bench-restricted-"))
    blobs = BlobStore(tmp / "blobs")
    smol = smolagents_runner()
    workers: dict[str, Callable[[str], Callable[[], object]]] = {}
    sessions = []
    try:
        for label, backend in (
            ("restricted in worker", RestrictedBackend()),
            ("native worker (plain Python)", NativeBackend(executor="python")),
        ):
            workdir = tmp / label.replace(" ", "-")
            workdir.mkdir()
            session = backend.open(SessionSpec(workdir=workdir, limits=LIMITS, blobs=blobs))
            sessions.append(session)
            workers[label] = worker_runner(session)
    except Exception as exc:  # the worker needs namespaces/seccomp; report rather than die
        print(f"(in-worker figures unavailable: {type(exc).__name__}: {exc})")

    columns = ["restricted in-process", "restricted in-process (no op budget)", *workers]
    if smol is not None:
        columns.append("smolagents LocalPythonExecutor")
    header = f"{'program':<22} {'plain exec':>11} " + " ".join(f"{c:>24}" for c in columns)
    print(header)
    print("-" * len(header))
    ratios: dict[str, list[float]] = {c: [] for c in columns}
    for name, code in PROGRAMS.items():
        runners: dict[str, Callable[[], object]] = {
            "plain exec": plain_exec(code),
            "restricted in-process": restricted_in_process(code, counting=True),
            "restricted in-process (no op budget)": restricted_in_process(code, counting=False),
        }
        for label, make in workers.items():
            runners[label] = make(code)
        figures = interleaved_best(runners, repeats)
        if smol is not None:
            slow_repeats = repeats if "trivial" in name else 2
            figures["smolagents LocalPythonExecutor"] = best_of(smol(code), slow_repeats)
        base = figures["plain exec"]
        cells = []
        for column in columns:
            ratio = figures[column] / base
            ratios[column].append(ratio)
            cells.append(f"{ratio:>23.2f}x")
        print(f"{name:<22} {base * 1000:>9.3f}ms " + " ".join(cells))
    if "restricted in worker" in workers and "native worker (plain Python)" in workers:
        print("\nrestricted in worker / native worker running plain Python:")
        for name, a, b in zip(
            PROGRAMS,
            ratios["restricted in worker"],
            ratios["native worker (plain Python)"],
            strict=True,
        ):
            print(f"  {name:<22} {a / b:.2f}x")
    if smol is not None:
        print("\nsmolagents / restricted in-process (how many times faster restricted is):")
        for name, a, b in zip(
            PROGRAMS,
            ratios["smolagents LocalPythonExecutor"],
            ratios["restricted in-process"],
            strict=True,
        ):
            print(f"  {name:<22} {a / b:.1f}x")
    else:
        print("\n(smolagents not installed: AST-interpreter comparison skipped)")

    bench_tool_calls(blobs, tmp)
    for session in sessions:
        session.close()  # type: ignore[attr-defined]


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
