"""What one ``Session.run`` step costs beyond its parts, and what an audit line costs.

Every figure is a ratio against a baseline measured in the same run, with the stages interleaved so
machine load hits them alike:

- the whole step on the fake backend (extract → gate → fake run → observe → audit) against
  ``gate.check`` of the same action alone: the glue, observation and audit overhead;
- one ``AuditLog.write`` with and without ``fsync`` against ``json.dumps`` of the same event;
- the whole step on the native backend against ``NativeSession.run`` of the same request: what the
  composition root adds to a real execution.

Run: ``.venv/bin/python benchmarks/bench_session.py``
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from figures import Figure, record

from safeexec.audit.blobs import BlobStore
from safeexec.audit.log import AuditLog
from safeexec.backends.base import SessionSpec
from safeexec.backends.fake import FakeBackend, FakeReply
from safeexec.backends.native import NativeBackend
from safeexec.gate import check
from safeexec.model.values import Action, ExecRequest
from safeexec.policy.loader import load_policy
from safeexec.policy.schema import BudgetConfig
from safeexec.session.session import Session

CODE = """\
import json
import statistics

rows = [{"name": f"n{i}", "score": i % 7} for i in range(200)]
by_letter = {}
for row in rows:
    by_letter.setdefault(row["name"][:2], []).append(row["score"])
summary = {k: statistics.mean(v) for k, v in by_letter.items()}
print(json.dumps(summary)[:120])
"""
REPLY = f"Here is the summary.\n\n```python\n{CODE}```\n\nIt groups rows by prefix.\n"
ROUNDS = 40
NATIVE_ROUNDS = 15


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000.0


def _interleaved(stages: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in stages}
    for stage in stages.values():  # warm up
        stage()
    for _ in range(rounds):
        for name, stage in stages.items():
            # As timeit does: no collector pauses inside a sample (they would land on whichever
            # stage happens to cross the threshold), a full collection between samples.
            gc.collect()
            gc.disable()
            try:
                started = time.perf_counter()
                stage()
                samples[name].append(time.perf_counter() - started)
            finally:
                gc.enable()
    return {name: _median_ms(values) for name, values in samples.items()}


def main() -> int:
    policy = load_policy("default")
    # A budget no benchmark exhausts, and the fake mode admitted for the glue measurement.
    roomy = replace(policy, budget=BudgetConfig(steps=10**6, cpu_seconds=1e9, tool_calls=10**6))
    with_fake = replace(
        roomy, backends=replace(roomy.backends, allowed=(*roomy.backends.allowed, "fake"))
    )
    action = Action.create(CODE)
    with tempfile.TemporaryDirectory(prefix="bench-session-") as scratch:
        root = Path(scratch)
        fake = FakeBackend(lambda request: FakeReply(stdout="{}\n"))
        with (
            Session(
                policy=with_fake, mode="fake", state_dir=root / "f", backends={"fake": fake}
            ) as fake_session,
            AuditLog(root / "plain.jsonl") as plain,
            AuditLog(root / "durable.jsonl", fsync=True) as durable,
        ):
            event = fake_session.run(REPLY).event
            results = _interleaved(
                {
                    "gate.check": lambda: check(action, policy),
                    "Session.run (fake)": lambda: fake_session.run(REPLY),
                    "json.dumps(event)": lambda: json.dumps(event.to_json()),
                    "AuditLog.write": lambda: plain.write(event),
                    "AuditLog.write fsync": lambda: durable.write(event),
                },
                ROUNDS,
            )

        native = NativeBackend()
        workdir = root / "direct"
        workdir.mkdir()
        direct = native.open(
            SessionSpec(workdir=workdir, limits=policy.limits, blobs=BlobStore(root / "b"))
        )
        request = ExecRequest(action_id="bench", code=CODE, limits=policy.limits)
        with Session(
            policy=roomy, mode="native", state_dir=root / "n", backends={"native": native}
        ) as native_session:
            native_results = _interleaved(
                {
                    "NativeSession.run": lambda: direct.run(request),
                    "Session.run (native)": lambda: native_session.run(REPLY),
                },
                NATIVE_ROUNDS,
            )
        direct.close()
        native.close()

    dumps = results["json.dumps(event)"]
    rows = [
        ("Session.run (fake)", results["Session.run (fake)"], "gate.check", results["gate.check"]),
        ("AuditLog.write", results["AuditLog.write"], "json.dumps(event)", dumps),
        ("AuditLog.write fsync", results["AuditLog.write fsync"], "json.dumps(event)", dumps),
        (
            "Session.run (native)",
            native_results["Session.run (native)"],
            "NativeSession.run",
            native_results["NativeSession.run"],
        ),
    ]
    print(f"python {sys.version.split()[0]}; {ROUNDS} rounds (native {NATIVE_ROUNDS}), medians")
    print(f"{'stage':<24}{'ms':>10}   {'baseline':<20}{'ms':>10}{'ratio':>9}")
    for name, ms, base_name, base_ms in rows:
        print(f"{name:<24}{ms:>10.3f}   {base_name:<20}{base_ms:>10.3f}{ms / base_ms:>8.2f}x")
    record(
        [
            Figure(
                figure=f"one step: {name}",
                peer_name=base_name,
                safeexec=ms / 1e3,
                peer=base_ms / 1e3,
                unit="s",
            )
            for name, ms, base_name, base_ms in rows
            if name.startswith("Session.run")
        ],
        source="bench_session",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
