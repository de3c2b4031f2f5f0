"""Running the escape suite against the ``restricted`` mode (imported by ``conftest.py``).

* ``restricted`` is the default: the restricted runtime inside the confined worker.
* ``restricted-in-process`` runs the in-process variant — whose host is the process it runs in — in
  a disposable child process with rlimits (address space, file size, CPU) as the outer bound the
  destructive attacks need; the child is the "host" whose canaries must stay intact.

An attack the restricted runtime refuses outright (an import outside the allowlist, a guarded
attribute, a builtin that does not exist there, a compile-time refusal) is blocked before it
reaches the OS: :class:`AttackRefused` ends the test there, reported as passed with the refusal
recorded in ``user_properties``. Everything else an attack does is checked by the test itself.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import pytest

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import BackendSession, OutputSink, SessionSpec, ToolGateway
from safeexec.backends.restricted import RestrictedBackend
from safeexec.errors import ConfigurationError
from safeexec.model.values import ExecRequest, ExecResult, ExecStatus, Limits
from safeexec.policy.loader import load_policy

if TYPE_CHECKING:
    from escape_support import Canaries

DEFAULT_IMPORTS = load_policy("default").imports.allow

_REFUSAL = re.compile(
    r"^(ImportError: import of .* is not allowed"
    r"|ImportError: '[\w.]+' has a view only in the confined worker"
    r"|GuardError: "
    r"|SyntaxError: restricted mode refused"
    r"|NameError: name '(eval|exec|compile|globals|locals|vars|input|breakpoint|help|exit|quit"
    r"|memoryview|open)' is not defined"
    r"|PermissionError: open\(\): .* is outside the working directory"
    r"|AttributeError: restricted module )"
)


# In the host process the views are refused: an attack through one ends at its import.
_WORKER_ONLY = re.compile(r"^ImportError: '[\w.]+' has a view only in the confined worker")


class AttackRefused(Exception):
    """The restricted runtime refused the attack's code before it could do anything."""


def refused_by_restricted(result: ExecResult) -> bool:
    return result.status is ExecStatus.ERROR and bool(_REFUSAL.match(result.message))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    if (
        report.when == "call"
        and call.excinfo is not None
        and call.excinfo.errisinstance(AttackRefused)
    ):
        report.outcome = "passed"
        report.longrepr = None
        item.user_properties.append(("blocked_by_restricted", str(call.excinfo.value)[:500]))


# -- the in-process variant under an outer bound -------------------------------------------------

_CHILD = r"""
import base64, json, resource, sys
from pathlib import Path
limits = json.loads(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limits["as"], limits["as"]))
resource.setrlimit(resource.RLIMIT_FSIZE, (limits["fsize"], limits["fsize"]))
resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu"], limits["cpu"]))
from safeexec.backends.base import SessionSpec
from safeexec.backends.restricted import RestrictedBackend
from safeexec.audit.blobs import BlobStore
from safeexec.model.values import ExecRequest
blobs = BlobStore(Path(limits["blobs"]))
session = RestrictedBackend(in_process=True).open(
    SessionSpec(workdir=Path(limits["workdir"]), blobs=blobs, imports=tuple(limits["imports"]))
)
out = sys.stdout
sys.stdout = sys.stderr
for line in sys.stdin:
    message = json.loads(line)
    if message["op"] == "run":
        request = ExecRequest.from_json(message["request"])
        reply = session.run(request).to_json()
    elif message["op"] == "reset":
        session.reset()
        reply = None
    elif message["op"] in ("upload", "download"):
        # Host-side file transfer, run by the real in-process session; errors travel by name.
        try:
            if message["op"] == "upload":
                session.upload(message["name"], base64.b64decode(message["data"]))
                reply = {"ok": None}
            else:
                reply = {"ok": base64.b64encode(session.download(message["name"])).decode()}
        except Exception as exc:
            kind = type(exc).__name__ if type(exc).__name__ == "ConfigurationError" else (
                "OSError" if isinstance(exc, OSError) else "other")
            reply = {"error": kind, "message": f"{type(exc).__name__}: {exc}"}
    else:
        break
    out.write(json.dumps(reply) + "\n")
    out.flush()
session.close()
"""


class InProcessChildSession:
    """An in-process restricted session living in a child process under rlimits."""

    def __init__(
        self, *, backend: InProcessRestrictedHarness, workdir: Path, blobs: BlobStore,
        imports: tuple[str, ...],
    ) -> None:  # fmt: skip
        self.workdir = workdir
        self.disk_bytes = backend.disk_bytes  # what the workdir may hold, as a native session
        bounds = {
            "as": 4 * 1024**3,
            "fsize": 64 * 1024**2,
            "cpu": 300,
            "blobs": str(blobs.root),
            "workdir": str(workdir),
            "imports": list(imports),
        }
        self._process = subprocess.Popen(
            [sys.executable, "-c", _CHILD, json.dumps(bounds)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.pid = self._process.pid

    def _call(self, message: dict[str, object]) -> object:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps(message) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"the in-process host died (exit {self._process.wait()})")
        return json.loads(line)

    def run(self, request: ExecRequest, *, on_output: OutputSink | None = None) -> ExecResult:
        return ExecResult.from_json(self._call({"op": "run", "request": request.to_json()}))

    def reset(self) -> None:
        self._call({"op": "reset"})

    def upload(self, name: str, data: bytes) -> None:
        self._transfer({"op": "upload", "name": name, "data": base64.b64encode(data).decode()})

    def download(self, name: str) -> bytes:
        return base64.b64decode(self._transfer({"op": "download", "name": name}))

    def _transfer(self, message: dict[str, object]) -> str:
        reply = self._call(message)
        assert isinstance(reply, dict)
        if "error" in reply:
            kinds = {"ConfigurationError": ConfigurationError, "OSError": OSError}
            raise kinds.get(str(reply["error"]), RuntimeError)(reply["message"])
        return str(reply["ok"] or "")

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


class InProcessRestrictedHarness:
    """Backend-shaped factory of :class:`InProcessChildSession`."""

    name: ClassVar[str] = "restricted"
    disk_bytes = 64 * 1024**2

    def start(self) -> None:
        """Nothing to start: each session is its own child process."""

    def close(self) -> None:
        """Sessions close themselves."""

    def open(self, spec: SessionSpec) -> InProcessChildSession:
        workdir = spec.workdir
        if workdir is None:
            workdir = Path(tempfile.mkdtemp(prefix="safeexec-inproc-"))
        return InProcessChildSession(
            backend=self, workdir=workdir, blobs=spec.blobs, imports=spec.imports
        )


# -- the restricted-only attacks ------------------------------------------------------------------


@dataclass
class Outcome:
    result: ExecResult
    stdout: str
    stderr: str

    @property
    def status(self) -> ExecStatus:
        return self.result.status

    @property
    def message(self) -> str:
        return self.result.message

    @property
    def text(self) -> str:
        return self.stdout + self.stderr + self.result.message


class RestrictedBox:
    """One restricted session (in the worker, or in this very process) under attack."""

    def __init__(self, session: BackendSession, blobs: BlobStore, secret: str) -> None:
        self.session = session
        self.blobs = blobs
        self._secret = secret

    def run(self, code: str, **limits: float) -> Outcome:
        request = ExecRequest(action_id="attack", code=code, limits=Limits(**limits))  # type: ignore[arg-type]
        result = self.session.run(request)
        outcome = Outcome(
            result=result,
            stdout=self.blobs.get(result.stdout).decode("utf-8", "replace"),
            stderr=self.blobs.get(result.stderr).decode("utf-8", "replace"),
        )
        assert self._secret not in outcome.text, "canary secret leaked"
        if _WORKER_ONLY.match(result.message):
            raise AttackRefused(result.message)
        return outcome

    def assert_refused(self, code: str, *fragments: str) -> Outcome:
        """The code is refused by the runtime (not run to an escape), with a message naming why."""
        outcome = self.run(code)
        assert outcome.status is ExecStatus.ERROR, outcome.text
        for fragment in fragments:
            assert fragment in outcome.text, outcome.text
        return outcome

    def assert_usable(self) -> None:
        outcome = self.run("print(6 * 7)")
        assert outcome.status is ExecStatus.OK and outcome.stdout == "42\n", outcome.text


BoxFactory = Callable[..., RestrictedBox]


@pytest.fixture(scope="session")
def worker_restricted_backend() -> Iterator[RestrictedBackend]:
    backend = RestrictedBackend()
    yield backend
    backend.close()


@pytest.fixture(params=["in-worker", "in-process"])
def restricted_box(
    request: pytest.FixtureRequest,
    canaries: Canaries,
    worker_restricted_backend: RestrictedBackend,
    tmp_path: Path,
) -> Iterator[BoxFactory]:
    """A factory of restricted sessions (``tools=`` a gateway, ``imports=`` an allowlist)."""
    backend = (
        worker_restricted_backend
        if request.param == "in-worker"
        else RestrictedBackend(in_process=True)
    )
    sessions: list[BackendSession] = []

    def make(
        *, tools: ToolGateway | None = None, imports: tuple[str, ...] = DEFAULT_IMPORTS
    ) -> RestrictedBox:
        workdir = tmp_path / f"work-{len(sessions)}"
        workdir.mkdir()
        blobs = BlobStore(tmp_path / "blobs")
        session = backend.open(
            SessionSpec(workdir=workdir, limits=Limits(), blobs=blobs, tools=tools, imports=imports)
        )
        sessions.append(session)
        return RestrictedBox(session, blobs, canaries.secret)

    yield make
    for session in sessions:
        session.close()
    canaries.assert_intact()
