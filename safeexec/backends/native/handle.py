"""The host's handle on one session process: its pid, descriptors and poller, and its kill.

A session (:mod:`safeexec.backends.native.native_session`) starts a worker and holds its
handle; one call (:mod:`safeexec.backends.native.call`) is handed the handle and kills the worker
through it when a limit is overrun.
"""

from __future__ import annotations

import contextlib
import os
import select
import selectors
import signal
import socket
import time
from dataclasses import dataclass, field

from safeexec.backends.native.procfs import descendants, processes_in_pid_namespace
from safeexec.sandbox.channel import FrameDecoder
from safeexec.sandbox.ladder import Rung
from safeexec.sandbox.layers import Layer, LayerStatus

__all__ = ["WorkerHandle"]

_MAX_WORKER_FRAME = 8 * 1024 * 1024
_KILL_WAIT_SECONDS = 5.0


@dataclass(slots=True)
class WorkerHandle:
    """One started session process, as the host holds it."""

    pid: int
    pidfd: int
    pidns: int
    channel: socket.socket
    stdout: int
    stderr: int
    private_pidns: bool = False  # checked by the host, not taken from the worker's word
    layers: dict[Layer, LayerStatus] = field(default_factory=dict)
    rung: Rung | None = None
    decoder: FrameDecoder = field(
        default_factory=lambda: FrameDecoder(max_frame_bytes=_MAX_WORKER_FRAME)
    )
    # Kept for the worker's life, so a call opens and registers nothing: a poller of the
    # channel, both streams and the pidfd (a stream is dropped from it at its end of file),
    # and /proc/<pid>/status, read for the peak RSS after every call.
    poller: select.poll = field(default_factory=select.poll)
    status: int = -1

    def __post_init__(self) -> None:
        for fd in (self.channel.fileno(), self.stdout, self.stderr, self.pidfd):
            self.poller.register(fd, select.POLLIN)
        self.status = os.open(f"/proc/{self.pid}/status", os.O_RDONLY | os.O_CLOEXEC)

    def close_fds(self) -> None:
        self.channel.close()
        for fd in (self.pidfd, self.stdout, self.stderr, self.status):
            with contextlib.suppress(OSError):
                os.close(fd)

    def kill(self, *, verify: bool = False) -> int:
        """SIGKILL the worker, whose pid namespace dies with it; ``verify`` checks that nothing
        survived (and kills what did), at the price of a scan of /proc.

        Returns how many processes besides the worker were alive when it was killed (counted
        only with ``verify``): the ones the code started and left running."""
        leftovers = 0
        if verify and self.private_pidns:
            leftovers = len(set(processes_in_pid_namespace(self.pidns)) - {self.pid})
        tree: dict[int, int] = {}  # pid -> pidfd, for every process below the worker
        if not self.private_pidns:
            # No namespace to take the tree down: stop everything below the worker first (so
            # nothing forks away), then kill it all and the worker's process group, and wait
            # for each to die (a SIGKILLed process is gone only once the kernel has run it).
            for pid in descendants(self.pid):
                with contextlib.suppress(OSError):
                    tree[pid] = os.pidfd_open(pid)
            leftovers = len(set(tree) - {self.pid}) if verify else 0
            for sig in (signal.SIGSTOP, signal.SIGKILL):
                for pidfd in tree.values():
                    with contextlib.suppress(OSError):
                        signal.pidfd_send_signal(pidfd, sig)
            with contextlib.suppress(OSError):
                os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        _wait_for_exits([self.pidfd, *tree.values()], _KILL_WAIT_SECONDS)
        for pidfd in tree.values():
            os.close(pidfd)
        survivors: list[int] = []
        if verify and self.private_pidns:
            survivors = processes_in_pid_namespace(self.pidns)
        for pid in survivors:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        return leftovers


def _wait_for_exits(pidfds: list[int], timeout: float) -> None:
    """Wait until every process open as ``pidfds`` has exited, at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    poller = selectors.DefaultSelector()
    for pidfd in pidfds:
        poller.register(pidfd, selectors.EVENT_READ)
    try:
        while poller.get_map() and (left := deadline - time.monotonic()) > 0:
            for key, _events in poller.select(left):
                poller.unregister(key.fd)
    finally:
        poller.close()
