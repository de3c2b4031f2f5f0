"""The allowlist variant's syscalls: what the worker's supported workloads were measured to make.

Measured with ``strace -f --decode-pids=pidns`` over native sessions running the 164 HumanEval
canonical solutions with their tests and the data-stack programs of ``docs/security/seccomp.md``
(numpy BLAS and SVD, pandas and CSV, matplotlib Agg, threads, asyncio, sqlite, tempfile, subprocess,
file and directory work): every syscall a session process made after its seccomp filter was loaded,
and every syscall of the processes and threads it started. 63 names on x86-64, CPython 3.11.

:data:`PROTOCOL_SYSCALLS` are calls the kernel and libc make on paths a trace of ordinary runs
rarely shows (returning from a signal handler, restarting an interrupted call, sleeping,
raising a signal at oneself); without them the first signal or ``time.sleep`` breaks a session.
Only :func:`safeexec.sandbox.seccomp.build_filter` reads these; the default filter does not.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "MEASURED_IOCTLS",
    "MEASURED_SYSCALLS",
    "PROTOCOL_IOCTLS",
    "PROTOCOL_SYSCALLS",
    "Allowlist",
    "allowlist",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Allowlist:
    """What the allowlist variant lets through: syscall names, and the ``ioctl`` requests."""

    syscalls: frozenset[str]
    ioctls: frozenset[int]


MEASURED_SYSCALLS: frozenset[str] = frozenset(
    {
        "access",
        "arch_prctl",
        "brk",
        "chmod",
        "clone",
        "clone3",
        "close",
        "close_range",
        "dup2",
        "epoll_create1",
        "epoll_ctl",
        "epoll_wait",
        "execve",
        "exit",
        "exit_group",
        "fcntl",
        "fdatasync",
        "fstat",
        "futex",
        "getcwd",
        "getdents64",
        "geteuid",
        "getpid",
        "getrandom",
        "getsockname",
        "gettid",
        "ioctl",
        "lseek",
        "madvise",
        "mbind",
        "mkdir",
        "mmap",
        "mprotect",
        "mremap",
        "munmap",
        "newfstatat",
        "openat",
        "pipe2",
        "poll",
        "pread64",
        "prlimit64",
        "pwrite64",
        "read",
        "readlink",
        "recvfrom",
        "rename",
        "rmdir",
        "rseq",
        "rt_sigaction",
        "rt_sigprocmask",
        "sched_getaffinity",
        "sendfile",
        "sendto",
        "set_robust_list",
        "set_tid_address",
        "socketpair",
        "sysinfo",
        "uname",
        "unlink",
        "unlinkat",
        "vfork",
        "wait4",
        "write",
    }
)

PROTOCOL_SYSCALLS: frozenset[str] = frozenset(
    {
        "rt_sigreturn",
        "restart_syscall",
        "sigaltstack",
        "clock_nanosleep",
        "nanosleep",
        "sched_yield",
        "tgkill",
        "kill",
        "getppid",
    }
)


# ioctl requests by number: the trace saw TCGETS (isatty), FIONBIO and FIOCLEX.
MEASURED_IOCTLS: frozenset[int] = frozenset({0x5401, 0x5421, 0x5451})
# Their counterparts: FIONCLEX, FIONREAD (bytes waiting), TIOCGWINSZ (a terminal's size).
PROTOCOL_IOCTLS: frozenset[int] = frozenset({0x5450, 0x541B, 0x5413})


def allowlist() -> Allowlist:
    """Everything the allowlist variant lets through (before the class rules refuse some)."""
    return Allowlist(
        syscalls=MEASURED_SYSCALLS | PROTOCOL_SYSCALLS, ioctls=MEASURED_IOCTLS | PROTOCOL_IOCTLS
    )
