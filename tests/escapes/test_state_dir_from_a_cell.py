"""A cell that knows where the host's state dir is can neither read, change nor probe it.

Issue 10 item 3: with ``blobs/`` world-searchable and blob files named by ``sha256(content)``, a
later session tested ``Path(".../blobs/ab/abcd...").exists()`` for guesses (Landlock does not
mediate ``stat``) and recovered another session's secret. Now the state dir is 0700 and blob file
names are keyed (``HMAC(store key, sha256)``), so a probe finds nothing, whether the session runs
under a uid of its own (a root host) or the host's (an unprivileged host, where only the keyed
names stand in the way). The control run proves the probe itself works.

The same cell also tries everything issue 10 items 1 and 2 did (list, read, unlink, rewrite,
plant links, chmod) against a state dir apart from its workdir: all fail, the log still
verifies, and nothing below the state dir changed owner.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from safeexec.audit.log import verify_log
from safeexec.backends.native import NativeBackend
from safeexec.errors import AuditError
from safeexec.model.values import ExecStatus, Outcome
from safeexec.session.session import Session

PROBE = """
import hashlib, pathlib
blobs = pathlib.Path(bytes.fromhex({blobs!r}).decode())
found = []
for guess in range(10000):
    digest = hashlib.sha256(f"code={{guess:04d}}\\n".encode()).hexdigest()
    try:
        (blobs / digest[:2] / digest).stat()
        found.append(guess)
    except OSError:
        pass
print("found", found)
"""

TAMPER = """
import pathlib
state = pathlib.Path(bytes.fromhex({state!r}).decode())
target = bytes.fromhex({target!r}).decode()
done = []
def attempt(name, action):
    try:
        action()
        done.append(name)
    except OSError:
        pass
attempt("list-blobs", lambda: list((state / "blobs").iterdir()))
attempt("read-key", lambda: (state / "blobs" / "blob-names.key").read_bytes())
attempt("read-log", lambda: (state / "audit.jsonl").read_bytes())
attempt("unlink-log", lambda: (state / "audit.jsonl").unlink())
attempt("rewrite-log", lambda: (state / "audit.jsonl").write_text(""))
attempt("replace-head", lambda: (state / "audit.jsonl.head").write_text("{{}}"))
attempt("plant-link", lambda: (state / "blobs" / "zz").symlink_to(target))
print("done", done)
"""


CHMOD = """
import pathlib
state = pathlib.Path(bytes.fromhex({state!r}).decode())
changed = []
for path in (state, state / "blobs", state / "audit.jsonl"):
    try:
        path.chmod(0o755)
        changed.append(path.name)
    except OSError:
        pass
print("changed", changed)
"""


@pytest.fixture
def reachable(tmp_path: Path) -> Iterator[Path]:
    """A directory every uid can walk into (pytest's own tmp dirs are private to the host)."""
    path = Path(tempfile.mkdtemp(prefix="safeexec-reachable-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _hidden(path: Path) -> str:
    """A path the static gate cannot read (SX305 would deny a literal): what an attacker does."""
    return str(path).encode().hex()


def _session(backend: NativeBackend, state: Path, workdir: Path) -> Session:
    workdir.mkdir(exist_ok=True)
    return Session(
        policy="default",
        mode=backend.name,
        backends={backend.name: backend},
        state_dir=state,
        workdir=workdir,
    )


def _printed(session: Session, outcome: Outcome) -> str | None:
    """What the cell printed, or ``None`` when the attack was refused before it could run."""
    if outcome.result is None or outcome.result.status is not ExecStatus.OK:
        return None
    return session.blobs.get(outcome.result.stdout).decode()


def _run(backend: NativeBackend, session: Session, code: str) -> str | None:
    outcome = session.run(f"```python\n{code}```")
    printed = _printed(session, outcome)
    if backend.name == "native":
        assert printed is not None, outcome.observation.text  # the attack really ran
    return printed


def test_a_later_session_cannot_probe_for_another_sessions_output(
    backend: NativeBackend, reachable: Path
) -> None:
    code = secrets.randbelow(10000)
    digest = hashlib.sha256(f"code={code:04d}\n".encode()).hexdigest()
    state = reachable / "state"
    with _session(backend, state, reachable / "first") as first:
        printed = _run(backend, first, f"print('code={code:04d}')\n")
    if printed is not None:
        assert f"blob://sha256:{digest}" in first.blobs  # the secret is stored, to be probed for
    decoy = reachable / "second" / "decoy"
    (decoy / digest[:2]).mkdir(parents=True)
    (decoy / digest[:2] / digest).write_text("planted by the test")
    with _session(backend, state, reachable / "second") as second:
        probed = _run(backend, second, PROBE.format(blobs=_hidden(state / "blobs")))
        control = _run(backend, second, PROBE.format(blobs=_hidden(Path("decoy"))))
    assert probed in ("found []\n", None), f"the probe recovered another session's output: {probed}"
    if backend.name == "native":
        assert control == f"found [{code}]\n"  # the same probe finds sha256 names it can reach


def test_a_cell_cannot_read_change_or_plant_anything_in_the_state_dir(
    backend: NativeBackend, reachable: Path
) -> None:
    state = reachable / "state"
    target = reachable / "target"
    target.mkdir(mode=0o700)
    with _session(backend, state, reachable / "work") as session:
        session.run("```python\nimport subprocess\n```")
        printed = _run(
            backend, session, TAMPER.format(state=_hidden(state), target=_hidden(target))
        )
        session.run("```python\nprint('after the attack')\n```")
    assert printed in ("done []\n", None), f"the cell reached the state dir: {printed}"
    report = verify_log(state)
    assert report.ok and report.events == 3, report.reason
    assert os.listdir(target) == []
    for path in [state, *state.rglob("*")]:
        info = path.lstat()
        assert info.st_uid == os.geteuid(), f"{path} changed owner to {info.st_uid}"
        if stat.S_ISDIR(info.st_mode):
            assert stat.S_IMODE(info.st_mode) == 0o700, path
        else:
            assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600, path


def test_a_cell_that_changes_the_state_dirs_mode_is_refused_or_caught(
    backend: NativeBackend, reachable: Path
) -> None:
    # Landlock does not mediate chmod. A root host's session runs as another uid, so chmod fails
    # (EPERM); an unprivileged host's session shares the host's uid and it succeeds. Then the host
    # notices before it writes anything more (owner and mode are checked on every put and append)
    # and the step raises AuditError. Preventing the chmod itself needs a private filesystem view
    # or a seccomp rule (issue 10, items 5 and 6).
    state = reachable / "state"
    with _session(backend, state, reachable / "work") as session:
        try:
            outcome = session.run(f"```python\n{CHMOD.format(state=_hidden(state))}```")
        except AuditError as exc:
            assert "changed" in str(exc), exc
            assert os.geteuid() != 0, "a root host's session changed the mode of its state dir"
            return
        printed = _printed(session, outcome)
    assert printed in ("changed []\n", None), printed
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert verify_log(state).ok
