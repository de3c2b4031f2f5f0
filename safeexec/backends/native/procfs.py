"""What the host reads about a session's processes from outside the sandbox (``/proc``)."""

from __future__ import annotations

import contextlib
import os
import signal

__all__ = [
    "descendants",
    "describe_death",
    "has_private_ipc",
    "is_pid_one_of_own_namespace",
    "is_zombie",
    "peak_rss_bytes",
    "processes_in_pid_namespace",
]

_CLK_TCK = os.sysconf("SC_CLK_TCK")
_STATUS_BYTES = 8192  # /proc/<pid>/status is ~1.5 KiB; VmHWM comes in its first third
_SIGNAL_REASONS: dict[int, str] = {
    signal.SIGSYS: "seccomp",
    signal.SIGKILL: "out of memory, CPU rlimit or an outside kill",
    signal.SIGSEGV: "crash, e.g. C stack overflow",
    signal.SIGXCPU: "CPU rlimit",
    signal.SIGXFSZ: "file size rlimit",
    signal.SIGBUS: "bad memory access",
    signal.SIGABRT: "abort",
}


def _process_cpu_seconds(pid: int) -> float:
    """CPU of ``pid``, its reaped children and its live descendants, in seconds."""
    total = 0
    pending = [pid]
    seen = 0
    while pending and seen < 4096:
        current = pending.pop()
        seen += 1
        try:
            with open(f"/proc/{current}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15])
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children", "rb") as fh:
                    pending += [int(c) for c in fh.read().split()]
        except (OSError, ValueError, IndexError):
            continue
    return total / _CLK_TCK


def peak_rss_bytes(status_fd: int) -> int:
    """VmHWM from a process's ``/proc/<pid>/status``, opened once by the caller (0 if gone)."""
    try:
        text = os.pread(status_fd, _STATUS_BYTES, 0)
        start = text.index(b"\nVmHWM:") + 7
        return int(text[start : text.index(b"\n", start)].split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return 0


def has_private_ipc(pid: int, template: int) -> bool:
    """Whether process ``pid`` has an IPC namespace of its own, read from ``/proc``: neither
    the host's nor its ``template``'s (which every session of that template would share).
    Unreadable counts as shared."""
    try:
        own = os.stat(f"/proc/{pid}/ns/ipc").st_ino
        shared = {os.stat("/proc/self/ns/ipc").st_ino, os.stat(f"/proc/{template}/ns/ipc").st_ino}
    except OSError:
        return False
    return own not in shared


def is_pid_one_of_own_namespace(status_fd: int) -> bool:
    """Whether a process is pid 1 of a pid namespace below ours (then its death kills its
    tree), from its ``/proc/<pid>/status``, opened once by the caller."""
    try:
        text = os.pread(status_fd, _STATUS_BYTES, 0)
        start = text.index(b"\nNSpid:") + 7
        levels = text[start : text.index(b"\n", start)].split()
    except (OSError, ValueError):
        return False
    return len(levels) >= 2 and levels[-1] == b"1"


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (a session without its own pid namespace)."""
    found: list[int] = []
    pending = [pid]
    while pending and len(found) < 65536:
        current = pending.pop()
        found.append(current)
        with contextlib.suppress(OSError, ValueError):
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as fh:
                    pending += [int(child) for child in fh.read().split()]
    return found


def processes_in_pid_namespace(inode: int) -> list[int]:
    survivors = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}/ns/pid").st_ino == inode:
                    survivors.append(int(entry))
            except OSError:
                continue
    return survivors


def is_zombie(pid: int) -> bool:
    """Whether ``pid`` has exited (or is gone) and only waits to be reaped."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except (OSError, IndexError):
        return True


def describe_death(status: int | None) -> tuple[str, int | None, int | None]:
    """(message, exit code, signal) for a session process's wait status."""
    if status is None:
        return "the worker died (exit status unknown)", None, None
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        reason = _SIGNAL_REASONS.get(number, "")
        return f"killed by {name}" + (f" ({reason})" if reason else ""), -number, number
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    return f"the worker exited with code {code}", code, None
