"""The seccomp-bpf filter every sandboxed process runs under (built by libseccomp via pyseccomp).

A tight denylist over a default of ALLOW: syscalls no ordinary program needs and that widen the
attack surface or break out of the other layers kill the process (SIGSYS, reported as such) or
fail with an errno, so ordinary code keeps a clean Python exception. libseccomp also kills any
syscall made through a foreign ABI (i386 ``int 0x80``, x32), which would bypass a denylist.
Why the default is ALLOW, and the review of every syscall it lets through:
``docs/security/seccomp.md``.
``build_filter(allow=...)`` builds the measured allowlist variant (default ENOSYS) that note
weighs against it, with every class rule kept.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import operator
import os
import socket
from functools import cache
from typing import TYPE_CHECKING

from safeexec.sandbox.syscalls import check, libc, load_pyseccomp

if TYPE_CHECKING:
    import pyseccomp

    from safeexec.sandbox.seccomp_allowlist import Allowlist

__all__ = [
    "KILLED_SYSCALLS",
    "UNAVAILABLE_CLASSES",
    "UNCOUNTED_CLASSES",
    "build_filter",
    "compile_filter",
    "compile_uncounted_filter",
    "load_compiled",
    "newest_known_syscall",
]

_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_INSTRUCTION_BYTES = 8

# No legitimate cell needs these; using one is an attack, so the process dies (SIGSYS).
KILLED_SYSCALLS = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "swapon",
    "swapoff",
    "acct",
)

# Refused with EPERM: namespace and mount games, handle-based opens, odd kernel interfaces.
_REFUSED_SYSCALLS = (
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "open_by_handle_at",
    "userfaultfd",
    "kcmp",
    "lookup_dcookie",
    "vhangup",
    "iopl",
    "ioperm",
    "quotactl",
    "settimeofday",
    "clock_settime",
    "adjtimex",
    "clock_adjtime",
    "syslog",
    "uselib",
    "nfsservctl",
    "name_to_handle_at",
    # Acting on another process's memory by pid (the pid namespace narrows it, this closes it).
    "process_madvise",
    "process_mrelease",
    "migrate_pages",
    "move_pages",
    # x86 segment tables, obsolete filesystem queries and the host's names: no cell needs them.
    "modify_ldt",
    "sysfs",
    "ustat",
    "_sysctl",
    "sethostname",
    "setdomainname",
    # fanotify watches whole mounts; even unprivileged it reports other processes' file events.
    "fanotify_init",
    "fanotify_mark",
)

# Whole kernel interfaces closed as classes, each with ENOSYS so libraries take their fallback
# (glibc's POSIX AIO and every event loop already do without these). Each class names a shared
# resource or a view that neither the rlimits nor Landlock bound:
UNAVAILABLE_CLASSES: dict[str, tuple[str, ...]] = {
    # Kernel AIO contexts draw on the machine-wide fs.aio-max-nr: one session could take it all.
    "aio": (
        "io_setup",
        "io_submit",
        "io_getevents",
        "io_pgetevents",
        "io_cancel",
        "io_destroy",
    ),
    # inotify watches any path it can stat, which Landlock does not mediate: host file events.
    "inotify": ("inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch"),
    # Secret memory is unmapped from the kernel's direct map and counts against no rlimit.
    "memfd_secret": ("memfd_secret",),
}

# Closed by a second filter, loaded last, on rungs that lack the layer which counts them (the
# host names the classes per session; see ``compile_uncounted_filter``):
UNCOUNTED_CLASSES: dict[str, tuple[str, ...]] = {
    # Memory no rlimit sees: memfd and System V shared memory pages stay allocated unmapped
    # (RLIMIT_AS counts mappings only), message queues and semaphore sets are kernel memory.
    # A memory cgroup charges all of them; without one they are refused.
    "unmapped_memory": ("memfd_create", "shmget", "msgget", "semget"),
    # Holders of an unlinked file's data that the host cannot find in the session's /proc:
    # a descriptor in flight in a unix socket (SCM_RIGHTS) and an inode a Landlock ruleset
    # pins. Refused where the disk budget counts files without a name from /proc, that is
    # wherever the workdir is not a size-bounded mount.
    "hidden_file_holders": ("sendmmsg", "landlock_create_ruleset"),
    # The same, for the one call a session with an egress proxy needs: it hands each
    # connection to the proxy over its channel with sendmsg (see backends.native.native_session).
    "descriptor_passing": ("sendmsg",),
    # Allocation without writing: gigabytes per millisecond between two polls of the budget,
    # and with FALLOC_FL_KEEP_SIZE blocks past a file's size, which RLIMIT_FSIZE does not bound.
    # Refused with EOPNOTSUPP, on which glibc's posix_fallocate writes the blocks instead.
    "preallocation": ("fallocate",),
}
_UNCOUNTED_ERRNO = {"fallocate": errno.EOPNOTSUPP}  # the rest: ENOSYS

# io_uring performs opens and connects that a filter on those syscalls never sees; ENOSYS lets
# libraries fall back to ordinary syscalls. clone3 passes its flags in memory seccomp cannot
# read, so it is refused with ENOSYS and libc falls back to clone, whose flags we can check.
_UNAVAILABLE_SYSCALLS = ("io_uring_setup", "io_uring_enter", "io_uring_register", "clone3")

# A denylist passes whatever it does not name, and it can only name what libseccomp knows: every
# number above libseccomp's newest syscall (statmount and listmount, which show the mount tree
# that /proc hides; open_tree_attr; the *xattrat calls; ...) is refused with ENOSYS as not yet
# reviewed. Every architecture numbers its native syscalls below 512.
_SYSCALL_NUMBER_CEILING = 512

_NAMESPACE_CLONE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
    0x00000080,  # CLONE_NEWTIME
)
_TTY_INJECTING_IOCTLS = (0x5412, 0x541C)  # TIOCSTI, TIOCLINUX


def build_filter(*, allow: Allowlist | None = None) -> pyseccomp.SyscallFilter:
    """Build (not load) the filter; ``filter.load()`` applies it to the calling thread.

    ``allow`` None is the default: whatever no rule names passes. Given ``allow`` (e.g.
    :func:`~safeexec.sandbox.seccomp_allowlist.allowlist`), only those syscalls pass and
    every other fails with ENOSYS; the rules below apply either way, so a name in ``allow`` that a
    rule refuses stays refused, and conditionally refused calls (``clone`` with namespace flags,
    ``ioctl(TIOCSTI)``, ``socketpair`` other than ``AF_UNIX``) stay refused on those arguments.
    """
    pyseccomp = load_pyseccomp()

    eperm = pyseccomp.ERRNO(errno.EPERM)
    enosys = pyseccomp.ERRNO(errno.ENOSYS)
    default = pyseccomp.ALLOW if allow is None else enosys
    rules = pyseccomp.SyscallFilter(defaction=default)
    for name in KILLED_SYSCALLS:
        rules.add_rule(pyseccomp.KILL_PROCESS, name)
    for name in _REFUSED_SYSCALLS:
        rules.add_rule(eperm, name)
    # ENOSYS is the allowlist's default action (libseccomp refuses a rule that repeats it), and
    # none of these is ever allowed there.
    unavailable: list[str | int] = [*_UNAVAILABLE_SYSCALLS]
    unavailable.extend(name for names in UNAVAILABLE_CLASSES.values() for name in names)
    unavailable.extend(range(newest_known_syscall() + 1, _SYSCALL_NUMBER_CEILING))
    for syscall in unavailable if allow is None else ():
        rules.add_rule(enosys, syscall)
    # No new sockets at all: networking is out, and so are connections to host unix services.
    # socketpair(AF_UNIX) stays, since asyncio and multiprocessing use it for local plumbing.
    rules.add_rule(eperm, "socket")
    rules.add_rule(eperm, "socketpair", pyseccomp.Arg(0, pyseccomp.NE, socket.AF_UNIX))
    for flag in _NAMESPACE_CLONE_FLAGS:
        rules.add_rule(eperm, "clone", pyseccomp.Arg(0, pyseccomp.MASKED_EQ, flag, flag))
    for request in _TTY_INJECTING_IOCTLS:
        rules.add_rule(eperm, "ioctl", pyseccomp.Arg(1, pyseccomp.MASKED_EQ, 0xFFFFFFFF, request))
    rules.add_rule(eperm, "personality", pyseccomp.Arg(0, pyseccomp.NE, 0))
    if allow is not None:
        _allow(rules, allow)
    return rules


def _allow(rules: pyseccomp.SyscallFilter, allow: Allowlist) -> None:
    """The allowlist variant's ALLOW rules. libseccomp lets an unconditional rule override the
    conditional refusals of the same syscall, so those are allowed on the complement only."""
    pyseccomp = load_pyseccomp()

    for name in sorted(allow.syscalls - _UNCONDITIONALLY_REFUSED - _CONDITIONALLY_REFUSED):
        rules.add_rule(pyseccomp.ALLOW, name)
    names = allow.syscalls
    if "clone" in names:
        namespaces = functools.reduce(operator.or_, _NAMESPACE_CLONE_FLAGS)
        rules.add_rule(
            pyseccomp.ALLOW, "clone", pyseccomp.Arg(0, pyseccomp.MASKED_EQ, namespaces, 0)
        )
    if "socketpair" in names:
        rules.add_rule(
            pyseccomp.ALLOW, "socketpair", pyseccomp.Arg(0, pyseccomp.EQ, socket.AF_UNIX)
        )
    if "personality" in names:
        rules.add_rule(pyseccomp.ALLOW, "personality", pyseccomp.Arg(0, pyseccomp.EQ, 0))
    for request in sorted(allow.ioctls - set(_TTY_INJECTING_IOCTLS)) if "ioctl" in names else ():
        rules.add_rule(
            pyseccomp.ALLOW, "ioctl", pyseccomp.Arg(1, pyseccomp.MASKED_EQ, 0xFFFFFFFF, request)
        )


_CONDITIONALLY_REFUSED = frozenset({"clone", "socketpair", "personality", "ioctl"})
# What the rules above refuse whatever the arguments: an allowlist cannot let these through.
_UNCONDITIONALLY_REFUSED = frozenset(
    {
        *KILLED_SYSCALLS,
        *_REFUSED_SYSCALLS,
        *_UNAVAILABLE_SYSCALLS,
        *(name for names in UNAVAILABLE_CLASSES.values() for name in names),
        "socket",
    }
)


def compile_uncounted_filter(classes: frozenset[str]) -> bytes:
    """A filter refusing the :data:`UNCOUNTED_CLASSES` named in ``classes`` (ENOSYS, or for
    ``fallocate`` EOPNOTSUPP: libraries take their fallback), as classic BPF; ``b""`` for none.

    Stacked after :func:`compile_filter`'s and loaded by the session itself once its own
    Landlock layer is in force, so the ``landlock_*`` calls it needs are made by then.
    """
    unknown = sorted(classes - UNCOUNTED_CLASSES.keys())
    if unknown:
        raise ValueError(f"unknown uncounted classes={unknown!r}")
    if not classes:
        return b""
    pyseccomp = load_pyseccomp()
    rules = pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    for name in sorted(n for c in classes for n in UNCOUNTED_CLASSES[c]):
        rules.add_rule(pyseccomp.ERRNO(_UNCOUNTED_ERRNO.get(name, errno.ENOSYS)), name)
    return _export(rules)


@cache
def newest_known_syscall() -> int:
    """The highest syscall number libseccomp has a name for on this architecture."""
    pyseccomp = load_pyseccomp()

    arch = pyseccomp.system_arch()
    # From the ceiling down: the first number with a name is the highest (a few dozen lookups
    # on the host's path to starting a template, not all 512).
    for number in reversed(range(_SYSCALL_NUMBER_CEILING)):
        with contextlib.suppress(ValueError):
            if pyseccomp.resolve_syscall(arch, number):
                return number
    return 0


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def compile_filter(*, allow: Allowlist | None = None) -> bytes:
    """The filter as classic BPF (generated once by libseccomp, loaded many times); ``allow``
    as for :func:`build_filter`."""
    return _export(build_filter(allow=allow))


def _export(rules: pyseccomp.SyscallFilter) -> bytes:
    """``rules`` as classic BPF."""
    read_end, write_end = os.pipe()
    try:
        with os.fdopen(write_end, "wb", closefd=True) as sink:
            rules.export_bpf(sink)
        chunks = []
        while chunk := os.read(read_end, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(read_end)


def load_compiled(program: bytes) -> None:
    """Install a compiled filter on the calling thread; needs no_new_privs. Raises OSError."""
    if not program or len(program) % _INSTRUCTION_BYTES:
        raise OSError(22, "not a BPF program")
    buffer = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len=len(program) // _INSTRUCTION_BYTES, filter=ctypes.addressof(buffer))
    check(
        libc.prctl(
            ctypes.c_int(_PR_SET_SECCOMP),
            ctypes.c_ulong(_SECCOMP_MODE_FILTER),
            ctypes.byref(prog),
            ctypes.c_ulong(0),
            ctypes.c_ulong(0),
        ),
        "prctl(PR_SET_SECCOMP)",
    )
