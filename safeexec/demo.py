"""The whole pipeline on the shipped defaults: ``python -m safeexec.demo`` (``make demo``).

Feeds five model replies through one :class:`~safeexec.session.session.Session` under the
``default`` policy on the native backend: a computation, a follow-up that uses its state, a syntax
error, a forbidden import and an infinite loop. Prints each verdict and observation, then checks the
audit log and its blobs. Exits non-zero if the log or a blob is missing.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import textwrap
from pathlib import Path

from safeexec.audit.blobs import BlobStore
from safeexec.audit.log import AuditLog
from safeexec.backends.base import SessionSpec
from safeexec.backends.registry import default_backend
from safeexec.errors import AuditError, PolicyError, SafeExecError
from safeexec.model.values import AuditEvent, Outcome
from safeexec.policy.loader import load_policy
from safeexec.policy.schema import Policy
from safeexec.session.session import Session

__all__ = ["REPLIES", "main"]

REPLIES: tuple[tuple[str, str], ...] = (
    (
        "a fenced block that computes something",
        """\
I'll compute the squares of the first ten numbers and their sum.

```python
squares = [n * n for n in range(10)]
print("sum of squares:", sum(squares))
```
""",
    ),
    (
        "a follow-up that uses state from the first",
        """\
Now the largest square, reusing `squares` from before:

```python
print("largest:", max(squares), "of", len(squares))
```
""",
    ),
    (
        "a syntax error",
        """\
A helper for the mean:

```python
def mean(values):
    return sum(values) / len(values
print(mean(squares))
```
""",
    ),
    (
        "a forbidden import",
        """\
Let me look around the machine:

```python
import subprocess
print(subprocess.run(["cat", "/etc/passwd"], capture_output=True).stdout)
```
""",
    ),
    (
        "an infinite loop",
        """\
Searching for the answer:

```python
n = 0
while n >= 0:
    n += 1
```
""",
    ),
)

_PREFERRED_MODES = ("native", "restricted")


def main(*, state_dir: Path | None = None) -> int:
    """Run the demo (state in ``state_dir``, default a fresh temporary directory); exit code."""
    notes: list[str] = []
    policy = _default_policy(notes)
    mode = _best_mode(policy, notes)
    if mode not in policy.backends.allowed:
        policy = dataclasses.replace(
            policy,
            backends=dataclasses.replace(
                policy.backends, allowed=(*policy.backends.allowed, mode), default=mode
            ),
        )
    state_dir = state_dir or Path(tempfile.mkdtemp(prefix="safeexec-demo-"))
    print(f"safeexec demo — policy {policy.info.id!r}, backend {mode!r}")
    for note in notes:
        print(f"  note: {note}")
    with Session(policy=policy, mode=mode, state_dir=state_dir) as session:
        for number, (title, reply) in enumerate(REPLIES, start=1):
            outcome = session.run(reply)
            _show(number, title, outcome)
        audit_path = session.audit.path
        budget = session.budget
    return _check_log(audit_path, state_dir, budget.steps_left)


def _default_policy(notes: list[str]) -> Policy:
    try:
        return load_policy("default")
    except PolicyError as exc:
        notes.append(f"the 'default' policy pack could not be loaded ({exc}); using Policy()")
        return Policy()


def _best_mode(policy: Policy, notes: list[str]) -> str:
    """The first of native, restricted that opens here under the policy's requirements."""
    for mode in _PREFERRED_MODES:
        try:
            backend = default_backend(mode)
            with tempfile.TemporaryDirectory(prefix="safeexec-probe-") as scratch:
                opened = backend.open(
                    SessionSpec(
                        workdir=Path(scratch),
                        limits=policy.limits,
                        blobs=BlobStore(Path(scratch) / ".blobs"),
                        require=frozenset(policy.backends.require),
                        imports=policy.imports.allow,
                        env={},
                    )
                )
                opened.close()
            return mode
        except SafeExecError as exc:
            notes.append(f"backend {mode!r} is not available here: {exc}")
    notes.append("falling back to the 'fake' backend: nothing will actually execute")
    return "fake"


def _show(number: int, title: str, outcome: Outcome) -> None:
    decision = outcome.decision
    rules = ", ".join(f.rule for f in decision.findings)
    status = "not run" if outcome.result is None else outcome.result.status.value
    print()
    print(f"[{number}] {title}")
    print(f"    verdict: {decision.verdict.value}" + (f" ({rules})" if rules else ""))
    print(f"    status:  {status}")
    print(textwrap.indent(outcome.observation.text.rstrip("\n") or "(no output)", "    | "))


def _check_log(audit_path: Path, state_dir: Path, steps_left: int) -> int:
    events = AuditLog(audit_path).read()
    blobs = BlobStore(state_dir / "blobs")
    missing = [ref for event in events for ref in _refs(event) if not _intact(blobs, ref)]
    print()
    print(f"audit log: {audit_path} ({len(events)} events)")
    print(f"blobs:     {state_dir / 'blobs'} ({sum(len(_refs(e)) for e in events)} referenced)")
    print(f"budget:    {steps_left} steps left")
    if len(events) != len(REPLIES):
        print(f"FAILED: expected {len(REPLIES)} audit events, found {len(events)}")
        return 1
    if missing:
        print(f"FAILED: blobs missing from the store: {missing}")
        return 1
    print("ok: every step was audited and every referenced blob exists and is intact")
    return 0


def _refs(event: AuditEvent) -> list[str]:
    """The event's blobs: the code it checked, then whatever output it produced."""
    outputs = [ref for ref in (event.stdout_ref, event.stderr_ref) if ref is not None]
    return [f"blob://sha256:{event.code_sha256}", *outputs]


def _intact(blobs: BlobStore, ref: str) -> bool:
    """Whether the blob is in the store and its bytes still hash to its name."""
    try:
        blobs.get(ref)
    except (KeyError, AuditError):
        return False
    return True


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SafeExecError as error:
        print(f"safeexec demo: error: {error}", file=sys.stderr)
        sys.exit(2)
