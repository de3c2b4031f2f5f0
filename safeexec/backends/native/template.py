"""The host-side client of the template process (zygote) that forks native sessions."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from safeexec.errors import BackendUnavailable
from safeexec.sandbox.channel import FrameDecoder, ProtocolError, recv_frame, send_frame_with_fds

_READ_CHUNK = 1 << 16
_STARTUP_SECONDS = 30.0


class _Template:
    """Client of one zygote: spawns sessions and learns their exit statuses."""

    def __init__(
        self, *, python: str, preload: tuple[str, ...], executor: str, pool_size: int
    ) -> None:
        self._lock = threading.Lock()
        self._statuses: dict[int, int] = {}
        self._changed = threading.Condition()
        host_end, child_end = socket.socketpair()
        env = {
            "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "OPENBLAS_NUM_THREADS": "1",  # the template must stay single-threaded to fork safely
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "MPLBACKEND": "Agg",
            "MPLCONFIGDIR": _template_cache_dir(),
        }
        options = {"preload": list(preload), "executor": executor, "pool_size": pool_size}
        self._process = subprocess.Popen(
            [
                python,
                "-I",
                "-m",
                "safeexec.sandbox.zygote",
                str(child_end.fileno()),
                json.dumps(options),
            ],
            env=env,
            cwd="/",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            pass_fds=[child_end.fileno()],
            start_new_session=True,
        )
        child_end.close()
        self._control = host_end
        host_end.settimeout(_STARTUP_SECONDS)
        try:
            ready = recv_frame(host_end)
        except (OSError, EOFError, ProtocolError) as exc:
            self._process.kill()
            raise BackendUnavailable(
                f"the native template process did not start: {exc!r}; run `safeexec doctor`"
            ) from exc
        host_end.settimeout(None)
        serving = ready.get("pid")
        # The process that forks sessions (a child of the one we started, in its own pid ns).
        self.pid = serving if isinstance(serving, int) else self._process.pid
        preloaded = ready.get("preloaded")
        self.preloaded = tuple(str(m) for m in preloaded) if isinstance(preloaded, list) else ()
        self._reader = threading.Thread(
            target=self._read_exits, name="safeexec-template", daemon=True
        )
        self._reader.start()

    def _read_exits(self) -> None:
        decoder = FrameDecoder(max_frame_bytes=4096)
        while True:
            try:
                data = self._control.recv(_READ_CHUNK)
                frames = decoder.feed(data) if data else []
            except (OSError, ProtocolError):
                data = b""
            if not data:
                with self._changed:
                    self._statuses[-1] = 0  # marks the template as gone
                    self._changed.notify_all()
                return
            with self._changed:
                for frame in frames:
                    pid, status = frame.get("pid"), frame.get("status")
                    if (
                        frame.get("op") == "exit"
                        and isinstance(pid, int)
                        and isinstance(status, int)
                    ):
                        self._statuses[pid] = status
                        if len(self._statuses) > 10_000:
                            self._statuses.pop(next(iter(self._statuses)))
                self._changed.notify_all()

    @property
    def alive(self) -> bool:
        return -1 not in self._statuses and self._process.poll() is None

    def spawn(self, fds: list[int]) -> None:
        """Ask for a session on ``fds`` (channel, stdout, stderr). The session's config goes to
        it over its own channel, never through the template: whatever the template reads stays
        in its heap, which every later session inherits (a passed-through env secret would)."""
        with self._lock:
            send_frame_with_fds(self._control, {"op": "spawn"}, fds)

    def exit_status(self, pid: int, *, timeout: float) -> int | None:
        """The wait status of a finished session process, once the template has reaped it."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while pid not in self._statuses:
                left = deadline - time.monotonic()
                if left <= 0 or -1 in self._statuses:
                    return None
                self._changed.wait(left)
            return self._statuses.pop(pid)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._control.shutdown(socket.SHUT_RDWR)
        self._control.close()
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def _template_cache_dir() -> str:
    path = Path(tempfile.gettempdir()) / f"safeexec-template-{os.geteuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    if path.is_symlink() or path.stat().st_uid != os.geteuid():
        raise BackendUnavailable(f"template cache dir={str(path)!r} is not ours; remove it")
    return str(path)
