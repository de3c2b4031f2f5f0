"""The escape suite: every attack runs against every backend under canaries.

Canaries are things a contained attack must leave untouched: a secret in the host environment,
a file outside the workdir (world-readable, so only confinement protects it), TCP and UDP
listeners on the host's loopback, a unix socket of a host service, and a host process the code
must not be able to signal. Each test asserts what a correct sandbox does: the attack is blocked,
or it is contained and the host is unaffected and the session still usable afterwards.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

# The restricted variants, the refusal rule and the restricted-only fixtures (hooks and fixtures
# must be names in this module for pytest to find them).
from restricted_support import (  # noqa: F401
    AttackRefused,
    InProcessRestrictedHarness,
    pytest_runtest_makereport,
    refused_by_restricted,
    restricted_box,
    worker_restricted_backend,
)

from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend, NativeSession
from safeexec.backends.restricted import RestrictedBackend
from safeexec.blobs import BlobStore
from safeexec.model import ExecRequest, ExecResult, ExecStatus, Limits

# A small disk budget keeps the disk-filling attacks cheap.
BACKENDS: dict[str, Callable[[], NativeBackend]] = {
    "native": lambda: NativeBackend(disk_bytes=256 * 1024 * 1024),
    "restricted": lambda: RestrictedBackend(  # type: ignore[dict-item,return-value]
        native=NativeBackend(executor="restricted", disk_bytes=256 * 1024 * 1024)
    ),
    "restricted-in-process": InProcessRestrictedHarness,  # type: ignore[dict-item]
}

CANARY_ENV = "SAFEEXEC_CANARY_SECRET"


@dataclass
class _Listener:
    """A loopback TCP or UDP endpoint that records whether anything reached it."""

    kind: int
    host: str = "127.0.0.1"
    hits: list[bytes] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, self.kind)
        self.sock.bind((self.host, 0))
        self.port = self.sock.getsockname()[1]
        if self.kind == socket.SOCK_STREAM:
            self.sock.listen(8)
        self.sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                if self.kind == socket.SOCK_STREAM:
                    conn, _ = self.sock.accept()
                    self.hits.append(b"connect")
                    conn.close()
                else:
                    data, _ = self.sock.recvfrom(4096)
                    self.hits.append(data)
            except (TimeoutError, OSError):
                continue

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@dataclass
class Canaries:
    secret: str
    secret_file: Path
    tcp: _Listener
    udp: _Listener
    unix_path: Path
    unix_hits: list[bytes]
    victim: subprocess.Popen[bytes]

    def leaked(self, text: str) -> bool:
        return self.secret in text

    def assert_intact(self) -> None:
        assert os.environ[CANARY_ENV] == self.secret
        assert self.secret_file.read_text() == self.secret, "the file outside the workdir changed"
        assert self.tcp.hits == [], "something reached the host's loopback TCP listener"
        assert self.udp.hits == [], "something reached the host's loopback UDP listener"
        assert self.unix_hits == [], "something reached the host's unix socket service"
        assert self.victim.poll() is None, "the host process was signalled"


@pytest.fixture(scope="session")
def canaries() -> Iterator[Canaries]:
    secret = "canary-" + secrets.token_hex(16)
    os.environ[CANARY_ENV] = secret
    outside = Path(tempfile.mkdtemp(prefix="safeexec-canary-"))
    outside.chmod(0o755)
    secret_file = outside / "secret.txt"
    secret_file.write_text(secret)
    secret_file.chmod(0o666)  # only confinement, not file modes, may protect it
    unix_path = outside / "service.sock"
    unix_server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix_server.bind(str(unix_path))
    unix_path.chmod(0o777)
    unix_server.listen(4)
    unix_server.settimeout(0.2)
    unix_hits: list[bytes] = []
    stop = threading.Event()

    def serve_unix() -> None:
        while not stop.is_set():
            try:
                conn, _ = unix_server.accept()
                unix_hits.append(b"connect")
                conn.close()
            except (TimeoutError, OSError):
                continue

    unix_thread = threading.Thread(target=serve_unix, daemon=True)
    unix_thread.start()
    tcp = _Listener(socket.SOCK_STREAM)
    udp = _Listener(socket.SOCK_DGRAM)
    victim = subprocess.Popen(["sleep", "3600"])
    try:
        yield Canaries(
            secret=secret,
            secret_file=secret_file,
            tcp=tcp,
            udp=udp,
            unix_path=unix_path,
            unix_hits=unix_hits,
            victim=victim,
        )
    finally:
        victim.kill()
        victim.wait()
        tcp.close()
        udp.close()
        stop.set()
        unix_thread.join()
        unix_server.close()
        os.environ.pop(CANARY_ENV, None)


@pytest.fixture(scope="session", params=list(BACKENDS))
def backend(request: pytest.FixtureRequest, canaries: Canaries) -> Iterator[NativeBackend]:
    """Each backend under test; started after the canaries so the secret is in the host env."""
    instance = BACKENDS[request.param]()
    instance.start()
    yield instance
    instance.close()


@dataclass
class Ran:
    result: ExecResult
    stdout: str
    stderr: str

    @property
    def text(self) -> str:
        return self.stdout + self.stderr + self.result.message


class Sandbox:
    """One session under attack, with helpers to run code and check the host afterwards."""

    def __init__(
        self,
        session: NativeSession,
        blobs: BlobStore,
        canaries: Canaries,
        *,
        restricted: bool = False,
    ) -> None:
        self.session = session
        self.blobs = blobs
        self.canaries = canaries
        self.restricted = restricted

    def run(self, code: str, **limits: float) -> Ran:
        request = ExecRequest(action_id="attack", code=code, limits=Limits(**limits))  # type: ignore[arg-type]
        result = self.session.run(request)
        ran = Ran(
            result=result,
            stdout=self.blobs.get(result.stdout).decode("utf-8", "replace"),
            stderr=self.blobs.get(result.stderr).decode("utf-8", "replace"),
        )
        assert not self.canaries.leaked(ran.text), f"canary secret leaked: {ran.text[:2000]}"
        for artifact in result.artifacts:
            assert not self.canaries.leaked(self.blobs.get(artifact.blob).decode("latin-1"))
        if self.restricted and refused_by_restricted(result):
            self.canaries.assert_intact()
            raise AttackRefused(result.message)
        return ran

    def assert_usable(self) -> None:
        """The host is unaffected and the session answers ordinary code again."""
        self.canaries.assert_intact()
        ran = self.run("print(6 * 7)")
        assert ran.result.status is ExecStatus.OK, ran.text
        assert ran.stdout.strip() == "42"


@pytest.fixture
def sandbox(backend: NativeBackend, canaries: Canaries, tmp_path: Path) -> Iterator[Sandbox]:
    blobs = BlobStore(tmp_path / "blobs")
    workdir = tmp_path / "work"
    workdir.mkdir()
    session = backend.open(SessionSpec(workdir=workdir, limits=Limits(), blobs=blobs))
    try:
        yield Sandbox(session, blobs, canaries, restricted=backend.name == "restricted")
    finally:
        session.close()
        canaries.assert_intact()
