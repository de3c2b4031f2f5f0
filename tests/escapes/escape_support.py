"""The escape suite's canaries and the session under attack, as importable classes.

Test modules import them from here, not from ``conftest``: which ``conftest`` module Python
finds by that name depends on what else pytest collected first (``tests/properties`` has one).
The fixtures that make them live in ``conftest.py``.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from restricted_support import AttackRefused, refused_by_restricted

from safeexec.audit.blobs import BlobStore
from safeexec.backends.native import NativeSession
from safeexec.model.values import ExecRequest, ExecResult, ExecStatus, Limits
from safeexec.sandbox.layers import Layer

__all__ = ["CANARY_ENV", "Canaries", "Listener", "Ran", "Sandbox", "run_as_nobody"]

CANARY_ENV = "SAFEEXEC_CANARY_SECRET"


@dataclass
class Listener:
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
    tcp: Listener
    udp: Listener
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

    def needs(self, layer: Layer) -> None:
        """On a host that cannot give the session ``layer`` (no delegated cgroup, no root for a
        mount), the attack it stops is a known hole there: xfail, and say why."""
        status = getattr(self.session, "layers", {}).get(layer)
        if status is not None and not status.active:
            pytest.xfail(f"known hole on this host without {layer.value}: {status.detail}")

    def assert_usable(self) -> None:
        """The host is unaffected and the session answers ordinary code again."""
        self.canaries.assert_intact()
        ran = self.run("print(6 * 7)")
        assert ran.result.status is ExecStatus.OK, ran.text
        assert ran.stdout.strip() == "42"


def _first_private_ancestor(path: Path) -> Path | None:
    for ancestor in reversed(path.parents):
        if ancestor != Path("/") and not ancestor.stat().st_mode & stat.S_IXOTH:
            return ancestor
    return None


def run_as_nobody(
    commands: list[list[str]], tmp_path: Path, *, cwd: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    """As root: run each command in turn as ``nobody`` (via ``setpriv``), the last one by
    ``exec``, and return how it went. When the interpreter lives under a directory ``nobody``
    cannot enter (pyenv under a 0700 ``/root``), a private mount namespace first re-exposes
    only the interpreter tree under that directory."""
    for tool in ("setpriv", "unshare", "mount"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} (util-linux) is needed to run the suite as another user")
    runtime = Path(sys.base_prefix).resolve()
    cover = _first_private_ancestor(runtime)
    script = ["set -e", "mount --make-rprivate /"]
    if cover is not None:
        stash = tmp_path / "runtime"
        stash.mkdir()
        script += [
            f"mount --bind '{runtime}' '{stash}'",
            f"mount -t tmpfs -o mode=755,size=1m tmpfs '{cover}'",
            f"mkdir -p '{runtime}'",
            f"mount --bind '{stash}' '{runtime}'",
        ]
    work = tmp_path / "home"
    work.mkdir()
    work.chmod(0o777)
    tmp_path.chmod(0o755)
    as_nobody = "setpriv --reuid=65534 --regid=65534 --clear-groups "
    for index, command in enumerate(commands):
        quoted = " ".join(f"'{arg}'" for arg in command)
        script.append(("exec " if index == len(commands) - 1 else "") + as_nobody + quoted)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(work),
        "TMPDIR": str(work),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return subprocess.run(
        ["unshare", "--mount", "sh", "-c", "\n".join(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
