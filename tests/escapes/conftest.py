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
from pathlib import Path

import pytest
from escape_support import CANARY_ENV, Canaries, Listener, Sandbox

# The restricted variants and the restricted-only fixtures (hooks and fixtures must be names in
# this module for pytest to find them).
from restricted_support import (  # noqa: F401
    InProcessRestrictedHarness,
    pytest_runtest_makereport,
    restricted_box,
    worker_restricted_backend,
)

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.backends.restricted import RestrictedBackend
from safeexec.model.values import Limits
from safeexec.session.preload import DATA_STACK

# A small disk budget keeps the disk-filling attacks cheap. The templates preload the data stack,
# as the default route's do for the default pack (sessions inherit what the preload left).
BACKENDS: dict[str, Callable[[], NativeBackend]] = {
    "native": lambda: NativeBackend(disk_bytes=256 * 1024 * 1024, preload=DATA_STACK),
    "restricted": lambda: RestrictedBackend(  # type: ignore[dict-item,return-value]
        native=NativeBackend(
            executor="restricted", disk_bytes=256 * 1024 * 1024, preload=DATA_STACK
        )
    ),
    "restricted-in-process": InProcessRestrictedHarness,  # type: ignore[dict-item]
}


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
    tcp = Listener(socket.SOCK_STREAM)
    udp = Listener(socket.SOCK_DGRAM)
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
