"""The data stack warm: a fresh session's first data step, and what the preload costs in memory.

``Session()`` on the default route (no ``backends=``) opens from a template that imported the
numpy, pandas and matplotlib its policy allows before forking (``safeexec.session.preload``).
Beside it, in the same run and interleaved: the same sessions from a template without the preload
(what every session got before). Figures:

- the first step of a fresh session that imports numpy and pandas, builds a frame and prints a
  sum (target <= 50 ms), and a later step of the same code in the same session; the same in
  restricted mode (printed: its views of the stack are built at the first import);
- the memory of an idle session (after one step that imports nothing), PSS and USS from
  ``/proc/PID/smaps_rollup`` (RSS would count every shared page in full), with and without the
  preload, and after the data step (where the unpreloaded session holds its own copy);
- the template itself (its RSS: the pages its sessions share, counted once per process) and its
  boot (the first session of a process waits for it).

Run: ``.venv/bin/python benchmarks/bench_data_stack.py [--rounds N] [--idle N]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from figures import Figure, record

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import Backend, SessionSpec
from safeexec.backends.native import NativeBackend, NativeSession
from safeexec.backends.registry import default_backend, shared_backends
from safeexec.model.values import ExecRequest, ExecStatus, Limits
from safeexec.policy.loader import load_policy
from safeexec.session.preload import data_preload
from safeexec.session.session import Session

DATA_STEP = (
    "import numpy as np\nimport pandas as pd\n"
    "frame = pd.DataFrame({'x': np.arange(1_000), 'y': np.arange(1_000) * 0.5})\n"
    "print(frame['y'].sum())\n"
)
REPLY = f"```python\n{DATA_STEP}```\n"
IDLE_STEP = "x = 1\n"
FIRST_STEP_TARGET = 0.050


def memory_kib(pid: int) -> tuple[int, int, int]:
    """(PSS, USS, RSS) of a process in KiB, from smaps_rollup."""
    fields: dict[str, int] = {}
    with open(f"/proc/{pid}/smaps_rollup") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                fields[parts[0].rstrip(":")] = int(parts[1])
    return fields["Pss"], fields["Private_Clean"] + fields["Private_Dirty"], fields["Rss"]


def _step_seconds(session: Session) -> float:
    started = time.perf_counter()
    outcome = session.run(REPLY)
    elapsed = time.perf_counter() - started
    assert outcome.result is not None and outcome.result.status is ExecStatus.OK, outcome
    return elapsed


def _steps(
    rounds: int, state: Path, mode: str, plain: Backend
) -> dict[str, dict[str, list[float]]]:
    """First and later data step of fresh sessions of ``mode`` on each route, interleaved round
    by round (the first session of each route, which waits for its template, is not counted)."""
    routes: dict[str, dict[str, Backend] | None] = {
        "preloaded": None,  # the default route: the shared backends, the policy's preload
        "plain": {mode: plain},
    }
    samples: dict[str, dict[str, list[float]]] = {
        name: {"first": [], "later": []} for name in routes
    }
    for index in range(rounds + 1):
        for name, backends in routes.items():
            with Session(mode=mode, state_dir=state, backends=backends) as session:
                first = _step_seconds(session)
                later = _step_seconds(session)
            if index:
                samples[name]["first"].append(first)
                samples[name]["later"].append(later)
    return samples


def _idle_memory(backend: NativeBackend, blobs: BlobStore, count: int) -> dict[str, float]:
    """Median PSS and USS (MiB) of ``count`` idle sessions, then of the same after the data step;
    and the template's RSS (the pages its sessions share, counted once)."""
    sessions: list[NativeSession] = []
    try:
        for _ in range(count):
            session = backend.open(SessionSpec(limits=Limits(), blobs=blobs))
            sessions.append(session)
            assert session.run(ExecRequest(action_id="idle", code=IDLE_STEP)).status is (
                ExecStatus.OK
            )
        time.sleep(0.3)
        idle = [memory_kib(s.pid or 0) for s in sessions]
        for session in sessions:
            assert session.run(ExecRequest(action_id="data", code=DATA_STEP)).status is (
                ExecStatus.OK
            )
        time.sleep(0.3)
        worked = [memory_kib(s.pid or 0) for s in sessions]
        template = memory_kib(backend.statistics().template_pid or 0)
    finally:
        for session in sessions:
            session.close()
    return {
        "idle_pss": statistics.median(m[0] for m in idle) / 1024,
        "idle_uss": statistics.median(m[1] for m in idle) / 1024,
        "data_pss": statistics.median(m[0] for m in worked) / 1024,
        "data_uss": statistics.median(m[1] for m in worked) / 1024,
        "template_rss": template[2] / 1024,
    }


def _boot_seconds(backend: NativeBackend) -> float:
    started = time.perf_counter()
    backend.start()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--restricted-rounds", type=int, default=4)
    parser.add_argument("--idle", type=int, default=4, help="idle sessions measured per route")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="safeexec-bench-data-"))
    preload = data_preload(load_policy("default"), "native")
    print(f"default pack, native mode: the template preloads {preload}")

    # The template boot, which the first session of a process waits for.
    booted = {}
    for name, modules in (("plain", ()), ("preloaded", preload)):
        probe = NativeBackend(preload=modules, pool_size=1)
        booted[name] = _boot_seconds(probe)
        probe.close()

    steps = {}
    for mode, rounds in (("native", args.rounds), ("restricted", args.restricted_rounds)):
        plain = default_backend(mode)
        try:
            steps[mode] = _steps(rounds, scratch / "state", mode, plain)
        finally:
            plain.close()
            shared_backends.close()
    first = {name: statistics.median(s["first"]) for name, s in steps["native"].items()}
    later = {name: statistics.median(s["later"]) for name, s in steps["native"].items()}
    restricted = {
        (name, which): statistics.median(s[which])
        for name, s in steps["restricted"].items()
        for which in ("first", "later")
    }

    blobs = BlobStore(scratch / "blobs")
    memory = {}
    for name, modules in (("plain", ()), ("preloaded", preload)):
        backend = NativeBackend(preload=modules, pool_size=2)
        try:
            backend.start()
            memory[name] = _idle_memory(backend, blobs, args.idle)
        finally:
            backend.close()

    print(
        f"\n{'':44} {'preloaded':>12} {'without':>12} {'ratio':>8}\n"
        + "\n".join(
            f"{label:44} {after:12.3f} {before:12.3f} {after / before:8.3f}"
            for label, after, before in (
                ("first data step, ms", first["preloaded"] * 1e3, first["plain"] * 1e3),
                ("later data step, ms", later["preloaded"] * 1e3, later["plain"] * 1e3),
                (
                    "idle session PSS, MiB",
                    memory["preloaded"]["idle_pss"],
                    memory["plain"]["idle_pss"],
                ),
                (
                    "idle session USS, MiB",
                    memory["preloaded"]["idle_uss"],
                    memory["plain"]["idle_uss"],
                ),
                (
                    "session PSS after the data step, MiB",
                    memory["preloaded"]["data_pss"],
                    memory["plain"]["data_pss"],
                ),
                (
                    "session USS after the data step, MiB",
                    memory["preloaded"]["data_uss"],
                    memory["plain"]["data_uss"],
                ),
                (
                    "template RSS (once per process), MiB",
                    memory["preloaded"]["template_rss"],
                    memory["plain"]["template_rss"],
                ),
                ("template boot, ms", booted["preloaded"] * 1e3, booted["plain"] * 1e3),
                (
                    "restricted: first data step, ms",
                    restricted["preloaded", "first"] * 1e3,
                    restricted["plain", "first"] * 1e3,
                ),
                (
                    "restricted: later data step, ms",
                    restricted["preloaded", "later"] * 1e3,
                    restricted["plain", "later"] * 1e3,
                ),
            )
        )
    )
    print(
        f"first data step over a later one, preloaded: "
        f"{first['preloaded'] / later['preloaded']:.2f}x; without: "
        f"{first['plain'] / later['plain']:.1f}x"
    )
    record(
        [
            Figure(
                figure="first data step (numpy + pandas) in a fresh `Session()`",
                peer_name="the same from a template without the preload",
                safeexec=first["preloaded"],
                peer=first["plain"],
                unit="s",
                bound="at_most",
                limit=FIRST_STEP_TARGET,
                on="safeexec",
            ),
            Figure(
                figure="first data step over a later one in the same session",
                peer_name="the same without the preload",
                safeexec=first["preloaded"] / later["preloaded"],
                peer=first["plain"] / later["plain"],
                unit="x",
            ),
            Figure(
                figure="idle session USS, data stack preloaded",
                peer_name="idle session without the preload",
                safeexec=memory["preloaded"]["idle_uss"],
                peer=memory["plain"]["idle_uss"],
                unit="MiB",
            ),
            Figure(
                figure="idle session PSS, data stack preloaded",
                peer_name="idle session without the preload",
                safeexec=memory["preloaded"]["idle_pss"],
                peer=memory["plain"]["idle_pss"],
                unit="MiB",
            ),
            Figure(
                figure="session USS after the data step, preloaded",
                peer_name="the same without the preload",
                safeexec=memory["preloaded"]["data_uss"],
                peer=memory["plain"]["data_uss"],
                unit="MiB",
            ),
        ],
        source="bench_data_stack",
    )


if __name__ == "__main__":
    main()
