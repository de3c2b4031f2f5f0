"""Native mode benchmark: every figure is a ratio to a baseline measured in the same run.

Peers on the same work: a fresh interpreter per call (what subprocess-per-call harnesses such as
codejail or llm-sandbox without containers pay) and a Jupyter kernel (the stateful peer: its
start against a session open, its warm execute against a warm round trip).

Run: ``python benchmarks/bench_native.py [--sessions-cap N] [--preload numpy,pandas]``.
Targets (from the issue): open <= 0.25x a fresh ``python -S -I -c pass``; sustained opens/s
>= 4x fresh-interpreter spawns/s; warm round-trip < 1 ms and >= 10x faster than a Jupyter
kernel's warm execute; a 200k-iteration loop within 1.1x of in-process ``exec``; an idle session
<= 2 MiB private memory (USS); >= 1,000 concurrent idle sessions.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import peers
from figures import Figure, record

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend, NativeSession
from safeexec.errors import SafeExecError
from safeexec.model.values import ExecRequest, ExecStatus, Limits
from safeexec.session.session import Session

LOOP = "total = 0\nfor i in range(200_000):\n    total += i\n"


def timings(action: Callable[[], object], *, repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return samples


def median_seconds(action: Callable[[], object], *, repeat: int) -> float:
    return statistics.median(timings(action, repeat=repeat))


def memory_kib(pid: int) -> tuple[int, int]:
    """(PSS, USS) of a process in KiB, from smaps_rollup."""
    fields: dict[str, int] = {}
    with open(f"/proc/{pid}/smaps_rollup") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                fields[parts[0].rstrip(":")] = int(parts[1])
    return fields["Pss"], fields["Private_Clean"] + fields["Private_Dirty"]


def cpu_seconds_of(pid: int) -> float:
    """CPU time of one live process in ns precision (schedstat; /proc/pid/stat counts ticks)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/schedstat") as fh:
            total += int(fh.read().split()[0])
    return total / 1e9


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def per_second(clients: int, total: int, one: Callable[[], object]) -> float:
    per_client = max(1, total // clients)

    def work() -> None:
        for _ in range(per_client):
            one()

    threads = [threading.Thread(target=work) for _ in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return per_client * clients / (time.perf_counter() - start)


def _session_route_seconds(scratch: Path, *, rounds: int) -> float:
    """Median of ``with Session(): run(print)`` after the first, with no ``backends=``."""
    samples = []
    for index in range(rounds + 1):
        started = time.perf_counter()
        with Session(state_dir=scratch / "route-state") as session:
            outcome = session.run("```python\nprint(1)\n```")
        elapsed = time.perf_counter() - started
        assert outcome.result is not None and outcome.result.status is ExecStatus.OK
        if index:
            samples.append(elapsed)
    return statistics.median(samples)


def _kernel_lifetime_seconds(scratch: Path, *, rounds: int) -> float:
    """Median of a Jupyter kernel's start, one execute and its shutdown."""
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        kernel = peers.JupyterKernel(str(scratch))
        try:
            kernel.execute("print(1)")
        finally:
            kernel.close()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions-cap", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--preload", default="")
    args = parser.parse_args()
    python = os.path.realpath(sys.executable)
    fresh_cmd = [python, "-S", "-I", "-c", "pass"]
    rows: list[tuple[str, str, str]] = []
    figures: list[Figure] = []

    scratch = Path(tempfile.mkdtemp(prefix="safeexec-bench-"))
    blobs = BlobStore(scratch / "blobs")
    preload = tuple(m for m in args.preload.split(",") if m)
    backend = NativeBackend(preload=preload)
    backend.start()

    def open_session() -> NativeSession:
        # A fresh private workdir per session, as when the caller gives none.
        return backend.open(SessionSpec(limits=Limits(), blobs=blobs))

    open_session().close()  # warm up

    # 1. Session open vs a fresh interpreter: with the warm pool refilled between opens (spaced
    # requests), and back to back (every open also waits for a fork).
    fresh_samples = timings(lambda: subprocess.run(fresh_cmd, check=True), repeat=args.repeat)
    fresh = statistics.median(fresh_samples)
    opened: list[NativeSession] = []

    def spaced_open() -> None:
        time.sleep(0.05)  # untimed below: only the open itself is measured
        start = time.perf_counter()
        opened.append(open_session())
        spaced.append(time.perf_counter() - start)

    spaced: list[float] = []
    for _ in range(args.repeat):
        spaced_open()
    back_to_back = timings(lambda: opened.append(open_session()), repeat=args.repeat)
    for session in opened:
        session.close()
    # CPU per open, summed over every process involved; unlike wall time it hardly depends on
    # how busy the machine is.
    before = children_cpu_seconds()
    for _ in range(args.repeat):
        subprocess.run(fresh_cmd, check=True)
    fresh_cpu = (children_cpu_seconds() - before) / args.repeat
    template_pid = backend.statistics().template_pid or 0
    host_before, template_before = time.process_time(), cpu_seconds_of(template_pid)
    counted = [open_session() for _ in range(args.repeat)]
    session_cpu = sum(cpu_seconds_of(s.pid or 0) for s in counted)
    host_cpu = (time.process_time() - host_before) / args.repeat
    template_cpu = (cpu_seconds_of(template_pid) - template_before) / args.repeat
    open_cpu = host_cpu + template_cpu + session_cpu / args.repeat
    for session in counted:
        session.close()
    rows.append(
        (
            "session open, CPU (host+template+session)",
            f"{open_cpu * 1e3:.2f} ms CPU (host {host_cpu * 1e3:.2f}, template "
            f"{template_cpu * 1e3:.2f}, session {session_cpu / args.repeat * 1e3:.2f}) vs fresh "
            f"interpreter {fresh_cpu * 1e3:.2f} ms CPU",
            f"{open_cpu / fresh_cpu:.2f}x",
        )
    )
    # Medians, and the best run of each (the machine's other load only ever adds time).
    for label, samples in (("warm pool", spaced), ("back to back", back_to_back)):
        value, best = statistics.median(samples), min(samples)
        p99 = statistics.quantiles(samples, n=100)[98]
        rows.append(
            (
                f"session open, {label}",
                f"{value * 1e3:.2f} ms (best {best * 1e3:.2f}, p99 {p99 * 1e3:.2f}) vs fresh "
                f"`python -S -I -c pass` {fresh * 1e3:.2f} ms "
                f"(best {min(fresh_samples) * 1e3:.2f})",
                f"{value / fresh:.2f}x, best {best / min(fresh_samples):.2f}x (target <= 0.25x)",
            )
        )
        figures.append(
            Figure(
                figure=f"session open ({label}), median",
                peer_name="fresh `python -S -I -c pass`",
                safeexec=value,
                peer=fresh,
                unit="s",
                bound="at_most" if label == "warm pool" else "none",
                limit=0.25,
            )
        )
        figures.append(
            Figure(
                figure=f"session open ({label}), p99",
                peer_name="fresh `python -S -I -c pass`, p99",
                safeexec=p99,
                peer=statistics.quantiles(fresh_samples, n=100)[98],
                unit="s",
            )
        )

    # 2. Warm round-trip and the loop, vs in-process exec.
    session = open_session()
    trivial = ExecRequest(action_id="bench", code="x = 1")
    session.run(trivial)
    warm = median_seconds(lambda: session.run(trivial), repeat=args.repeat * 10)
    compiled_trivial = compile("x = 1", "<bench>", "exec")
    in_process = median_seconds(lambda: exec(compiled_trivial, {}), repeat=args.repeat * 10)
    rows.append(
        (
            "warm round-trip of `x = 1`",
            f"{warm * 1e3:.3f} ms vs in-process exec {in_process * 1e6:.2f} us",
            f"{warm / in_process:.0f}x (target < 1 ms absolute)",
        )
    )
    figures.append(
        Figure(
            figure="warm round trip of `x = 1`",
            peer_name="(absolute)",
            safeexec=warm,
            peer=None,
            unit="s",
            bound="at_most",
            limit=0.001,
            on="safeexec",
        )
    )
    per_call = median_seconds(peers.fresh_interpreter("x = 1"), repeat=args.repeat)
    rows.append(
        (
            "`x = 1` per call: warm session vs fresh interpreter",
            f"{warm * 1e3:.3f} ms vs `python -S -I -c 'x = 1'` {per_call * 1e3:.2f} ms",
            f"{warm / per_call:.3f}x",
        )
    )
    figures.append(
        Figure(
            figure="one call of `x = 1` (warm session)",
            peer_name="fresh `python -S -I` per call",
            safeexec=warm,
            peer=per_call,
            unit="s",
        )
    )
    kernel = peers.JupyterKernel(str(scratch))
    try:
        kernel.execute("x = 1")
        kernel_warm = median_seconds(lambda: kernel.execute("x = 1"), repeat=args.repeat * 3)
    finally:
        kernel.close()
    rows.append(
        (
            "warm execute of `x = 1` vs a Jupyter kernel",
            f"{warm * 1e3:.3f} ms vs ipykernel {kernel_warm * 1e3:.2f} ms "
            f"(kernel start {kernel.start_seconds:.2f} s vs session open "
            f"{statistics.median(spaced) * 1e3:.1f} ms)",
            f"{warm / kernel_warm:.3f}x (target <= 0.1x)",
        )
    )
    figures.append(
        Figure(
            figure="warm execute of `x = 1`",
            peer_name="Jupyter kernel (ipykernel) warm execute",
            safeexec=warm,
            peer=kernel_warm,
            unit="s",
            bound="at_most",
            limit=0.1,
        )
    )
    figures.append(
        Figure(
            figure="session open (warm pool)",
            peer_name="Jupyter kernel start (to ready)",
            safeexec=statistics.median(spaced),
            peer=kernel.start_seconds,
            unit="s",
        )
    )
    # What users call: `with Session(): run` on the default route (the process's shared
    # backends), against a Jupyter kernel's whole start + execute + shutdown.
    route = _session_route_seconds(scratch, rounds=args.repeat)
    kernel_life = _kernel_lifetime_seconds(scratch, rounds=3)
    rows.append(
        (
            "`with Session(): run` (default route)",
            f"{route * 1e3:.1f} ms median after the first vs Jupyter start+execute+shutdown "
            f"{kernel_life * 1e3:.0f} ms; backend-level open "
            f"{statistics.median(spaced) * 1e3:.2f} ms",
            f"{route * 1e3:.1f} ms (target <= 20 ms)",
        )
    )
    figures.append(
        Figure(
            figure="`with Session(): run` (default route), median after the first",
            peer_name="Jupyter kernel start + execute + shutdown",
            safeexec=route,
            peer=kernel_life,
            unit="s",
            bound="at_most",
            limit=0.020,
            on="safeexec",
        )
    )
    loop_request = ExecRequest(action_id="bench", code=LOOP)
    assert session.run(loop_request).status is ExecStatus.OK
    sandboxed_loop = median_seconds(lambda: session.run(loop_request), repeat=args.repeat)
    loop_code = compile(LOOP, "<bench>", "exec")
    host_loop = median_seconds(lambda: exec(loop_code, {}), repeat=args.repeat)
    rows.append(
        (
            "200k-iteration loop (incl. round-trip)",
            f"{sandboxed_loop * 1e3:.2f} ms vs in-process exec {host_loop * 1e3:.2f} ms",
            f"{sandboxed_loop / host_loop:.3f}x (target <= 1.1x)",
        )
    )
    figures.append(
        Figure(
            figure="200k-iteration loop in a session (incl. round trip)",
            peer_name="in-process `exec`",
            safeexec=sandboxed_loop,
            peer=host_loop,
            unit="s",
            bound="at_most",
            limit=1.1,
        )
    )

    # 3. Memory of an idle session vs a fresh idle interpreter.
    idle = open_session()
    idle.run(trivial)
    time.sleep(0.2)
    pss, uss = memory_kib(idle.pid or 0)
    sleeper = subprocess.Popen([python, "-S", "-I", "-c", "import time; time.sleep(60)"])
    time.sleep(0.5)
    fresh_pss, fresh_uss = memory_kib(sleeper.pid)
    sleeper.kill()
    sleeper.wait()
    if preload:
        # What a session would cost without the template: a fresh interpreter importing the same.
        imports = "; ".join(f"import {name}" for name in preload)
        loaded = subprocess.Popen([python, "-I", "-c", f"{imports}; import time; time.sleep(60)"])
        time.sleep(5)
        loaded_pss, loaded_uss = memory_kib(loaded.pid)
        loaded.kill()
        loaded.wait()
        rows.append(
            (
                "idle session vs interpreter importing preload",
                f"session USS {uss / 1024:.2f} MiB vs {loaded_uss / 1024:.2f} MiB "
                f"(PSS {loaded_pss / 1024:.2f} MiB) for `{imports}`",
                f"USS {uss / loaded_uss:.3f}x",
            )
        )
    idle.close()
    session.close()
    rows.append(
        (
            "idle session memory (PSS / USS)",
            f"{pss / 1024:.2f} / {uss / 1024:.2f} MiB vs fresh interpreter "
            f"{fresh_pss / 1024:.2f} / {fresh_uss / 1024:.2f} MiB",
            f"USS {uss / fresh_uss:.2f}x (target USS <= 2 MiB)",
        )
    )
    figures.append(
        Figure(
            figure="idle session private memory (USS)",
            peer_name="fresh idle interpreter",
            safeexec=uss / 1024,
            peer=fresh_uss / 1024,
            unit="MiB",
            bound="at_most",
            limit=2.0,
            on="safeexec",
        )
    )

    # 4. How many idle sessions fit before any limit.
    many: list[NativeSession] = []
    stop_reason = f"stopped at the cap of {args.sessions_cap}"
    try:
        while len(many) < args.sessions_cap:
            many.append(open_session())
    except (SafeExecError, OSError) as exc:
        stop_reason = f"limit hit: {type(exc).__name__}: {str(exc)[:80]}"
    total_uss = sum(memory_kib(s.pid or 0)[1] for s in many if s.pid)
    rows.append(
        (
            "concurrent idle sessions",
            f"{len(many)} open ({stop_reason}); {total_uss / 1024:.0f} MiB private in total",
            f"{total_uss / 1024 / max(1, len(many)):.2f} MiB USS each",
        )
    )
    figures.append(
        Figure(
            figure=f"concurrent idle sessions (cap {args.sessions_cap})",
            peer_name="(absolute)",
            safeexec=len(many),
            peer=None,
            unit="sessions",
            bound="at_least",
            limit=1000,
            on="safeexec",
        )
    )
    for s in many:
        s.close()

    # 5. Sustained opens per second, 1 and 8 clients, vs fresh spawns per second.
    for clients in (1, 8):
        spawned = per_second(clients, 32, lambda: subprocess.run(fresh_cmd, check=True))
        kept: list[NativeSession] = []

        def open_kept(kept: list[NativeSession] = kept) -> None:
            kept.append(open_session())

        opens = per_second(clients, 64, open_kept)
        for s in kept:
            s.close()
        cycles = per_second(clients, 64, lambda: open_session().close())
        rows.append(
            (
                f"opens/s with {clients} client(s)",
                f"{opens:.0f} opens/s ({cycles:.0f} open+close/s) vs {spawned:.0f} fresh spawns/s",
                f"{opens / spawned:.2f}x (target >= 4x)",
            )
        )
        figures.append(
            Figure(
                figure=f"sustained opens/s, {clients} client(s)",
                peer_name="fresh interpreter spawns/s",
                safeexec=opens,
                peer=spawned,
                unit="/s",
                bound="at_least",
                limit=4.0,
            )
        )
        figures.append(
            Figure(
                figure=f"open+close cycles/s, {clients} client(s)",
                peer_name="fresh interpreter spawns/s",
                safeexec=cycles,
                peer=spawned,
                unit="/s",
            )
        )

    backend.close()
    width = max(len(r[0]) for r in rows)
    print(f"native backend benchmark (python {sys.version.split()[0]}, preload={preload or '-'})")
    for name, measured, ratio in rows:
        print(f"  {name:<{width}}  {ratio:<32}  {measured}")
    record(figures, source="bench_native")


if __name__ == "__main__":
    main()
