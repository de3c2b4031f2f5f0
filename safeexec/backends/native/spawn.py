"""Asking the template for a session process, at an open or ahead of one.

A spawn hands the template the session's channel, stdout, stderr and workdir mount; the
template gives them to a pool member, which attaches the workdir and then waits for the host's
config before it runs anything. That wait makes a spawn safe to send ahead: the backend keeps a
few sessions spawned ahead (each with a fresh workdir of its own), and an open that needs its
own workdir takes one, so that what is left on its path is the config, the member finishing its
confinement, and its hello. A session process spawned ahead serves exactly one session, or
none: it exits when its channel closes unused.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from safeexec.backends.native.disk import SpareWorkdirs, WorkdirMount, remove_workdir
from safeexec.backends.native.template import _Template
from safeexec.errors import BackendError

__all__ = ["Spawned", "SpawnedAhead", "spawn"]

_TOP_UP_DELAY_SECONDS = 0.01


@dataclass(slots=True)
class Spawned:
    """The host's ends of one spawned session process: its channel, stdout and stderr."""

    channel: socket.socket
    stdout: int
    stderr: int

    def close(self) -> None:
        """Close every end (a session process still waiting for its config then exits)."""
        self.channel.close()
        for fd in (self.stdout, self.stderr):
            with contextlib.suppress(OSError):
                os.close(fd)


def spawn(template: _Template, workdir: Path, disk: WorkdirMount) -> Spawned:
    """Ask ``template`` for a session process working in ``workdir`` (on ``disk``'s mount, if
    the host made one); raises ``BackendError``."""
    host_end, child_end = socket.socketpair()
    out_read, out_write = os.pipe2(os.O_CLOEXEC)
    err_read, err_write = os.pipe2(os.O_CLOEXEC)
    spawned = Spawned(channel=host_end, stdout=out_read, stderr=err_read)
    try:
        mount = disk.clone()
    except OSError:
        # (EINVAL in a user namespace that does not own the mount.) The session then works
        # on the host's mount at the workdir's path, and its layer report says the disk layer
        # is not its own: a missing layer, not a failure to start.
        mount = None
    try:
        fds = [child_end.fileno(), out_write, err_write, *([] if mount is None else [mount])]
        template.spawn(fds, workdir=str(workdir))
    except OSError as exc:
        spawned.close()
        raise BackendError(f"could not start a native session: {exc}") from exc
    finally:
        child_end.close()
        os.close(out_write)
        os.close(err_write)
        if mount is not None:
            os.close(mount)
    return spawned


class SpawnedAhead:
    """Session processes spawned ahead of the opens that take them, each with its own fresh
    workdir; at most ``keep`` at once, topped up by a thread of their own (off every open's
    path) when the template announces a warm member and after every take."""

    def __init__(self, workdirs: SpareWorkdirs, *, keep: int) -> None:
        self._workdirs = workdirs
        self._keep = keep
        self._lock = threading.Lock()
        self._ready: list[tuple[_Template, Path, WorkdirMount, Spawned]] = []
        self._closed = False
        self._template: _Template | None = None
        self._wake = threading.Event()
        self._filler: threading.Thread | None = None

    def request(self, template: _Template) -> None:
        """Top up to ``keep`` from ``template`` (the backend's current one), in the background;
        then top up the spare workdirs too."""
        with self._lock:
            if self._closed:
                return
            self._template = template
            if self._filler is None:
                self._filler = threading.Thread(
                    target=self._fill_loop, name="safeexec-spawn-ahead", daemon=True
                )
                self._filler.start()
        self._wake.set()

    def take(self, template: _Template) -> tuple[Path, WorkdirMount, Spawned] | None:
        """A session process spawned ahead by ``template`` (the backend's current one) with its
        workdir, or None; those of an earlier template are discarded. Asks for a top-up."""
        stale: list[tuple[_Template, Path, WorkdirMount, Spawned]] = []
        found = None
        with self._lock:
            while self._ready and found is None:
                entry = self._ready.pop(0)
                if entry[0] is template:
                    found = entry[1:]
                else:
                    stale.append(entry)
        for _template, workdir, disk, spawned in stale:
            _discard(workdir, disk, spawned)
        self.request(template)
        return found

    def close(self) -> None:
        """Let every session process spawned ahead exit and remove its workdir; later requests
        spawn nothing."""
        with self._lock:
            self._closed = True
            ready, self._ready = self._ready, []
        self._wake.set()  # the filler sees the close and ends
        for _template, workdir, disk, spawned in ready:
            _discard(workdir, disk, spawned)

    def _fill_loop(self) -> None:
        while True:
            self._wake.wait()
            # A little later: right after a take, the open that took it is still on its way
            # (the template's refill waits the same for the same reason).
            time.sleep(_TOP_UP_DELAY_SECONDS)
            self._wake.clear()
            with self._lock:
                if self._closed:
                    return
                template = self._template
            while template is not None and template.alive and self._fill(template):
                pass
            while self._workdirs.fill():
                pass

    def _fill(self, template: _Template) -> bool:
        """Spawn one session process ahead; False when ``keep`` wait, on close or on failure."""
        with self._lock:
            if self._closed or len(self._ready) >= self._keep:
                return False
        workdir, disk = self._workdirs.take()
        try:
            spawned = spawn(template, workdir, disk)
        except BackendError:
            remove_workdir(workdir, disk)
            return False
        with self._lock:
            if not self._closed and len(self._ready) < self._keep:
                self._ready.append((template, workdir, disk, spawned))
                return True
        _discard(workdir, disk, spawned)
        return False


def _discard(workdir: Path, disk: WorkdirMount, spawned: Spawned) -> None:
    spawned.close()
    remove_workdir(workdir, disk)
