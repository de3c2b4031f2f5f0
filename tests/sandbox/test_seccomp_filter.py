"""The seccomp filter compiles, and what it kills or refuses is what the issue asks for."""

from __future__ import annotations

import json
import subprocess
import sys

import pyseccomp

from safeexec.sandbox import seccomp
from safeexec.sandbox.seccomp_allowlist import (
    MEASURED_SYSCALLS,
    PROTOCOL_SYSCALLS,
    Allowlist,
    allowlist,
)


def test_the_filter_compiles_to_classic_bpf() -> None:
    program = seccomp.compile_filter()
    assert program and len(program) % 8 == 0


def test_every_named_syscall_exists_on_this_architecture() -> None:
    arch = pyseccomp.system_arch()
    for name in seccomp.KILLED_SYSCALLS:
        assert pyseccomp.resolve_syscall(arch, name) >= 0, name


def test_the_dangerous_families_are_covered() -> None:
    killed = set(seccomp.KILLED_SYSCALLS)
    assert {"ptrace", "process_vm_readv", "process_vm_writev", "bpf", "perf_event_open"} <= killed
    assert {"kexec_load", "init_module", "finit_module", "delete_module", "keyctl"} <= killed
    assert {"reboot"} <= killed


def test_the_interfaces_that_bypass_other_layers_are_closed_as_classes() -> None:
    classes = seccomp.UNAVAILABLE_CLASSES
    assert set(classes["aio"]) == {
        "io_setup",
        "io_submit",
        "io_getevents",
        "io_pgetevents",
        "io_cancel",
        "io_destroy",
    }
    assert {"inotify_init", "inotify_init1", "inotify_add_watch"} <= set(classes["inotify"])
    assert classes["memfd_secret"] == ("memfd_secret",)
    arch = pyseccomp.system_arch()
    for names in classes.values():
        for name in names:
            assert pyseccomp.resolve_syscall(arch, name) >= 0, name


# A child that sets no_new_privs, loads the filter it is given and reports what some calls do.
_PROBE = """
import ctypes, errno, fcntl, json, os, socket, sys, termios
from safeexec.sandbox.seccomp import load_compiled
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
load_compiled(sys.stdin.buffer.read())

def outcome(call):
    try:
        call()
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    return "ok"

def fork():
    pid = os.fork()  # glibc's fork is clone without namespace flags
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)

read_end, write_end = os.pipe()
print(json.dumps({
    "fork": outcome(fork),
    "getpriority": outcome(lambda: os.getpriority(os.PRIO_PROCESS, 0)),
    "stat": outcome(lambda: os.stat(".")),
    "socket": outcome(lambda: socket.socket()),
    "fionread": outcome(lambda: fcntl.ioctl(read_end, termios.FIONREAD, b"    ")),
    "tiocsti": outcome(lambda: fcntl.ioctl(read_end, termios.TIOCSTI, b"x")),
}))
"""


def _probe(program: bytes) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], input=program, capture_output=True, timeout=60, check=True
    )
    outcomes: dict[str, str] = json.loads(done.stdout)
    return outcomes


def test_the_allowlist_variant_refuses_what_it_does_not_list() -> None:
    assert "getpriority" not in allowlist().syscalls
    default = _probe(seccomp.compile_filter())
    allowlisted = _probe(seccomp.compile_filter(allow=allowlist()))
    assert default["getpriority"] == "ok" and allowlisted["getpriority"] == "ENOSYS"
    assert default["stat"] == allowlisted["stat"] == "ok"
    assert default["fork"] == allowlisted["fork"] == "ok"


def test_the_allowlist_variant_keeps_every_class_rule() -> None:
    # Listing a refused call does not let it through, and a conditional refusal still holds on
    # its arguments while the same call with other arguments passes.
    listed = allowlist()
    everything = Allowlist(
        syscalls=listed.syscalls | {"socket", "ptrace"},
        ioctls=listed.ioctls | {0x5412},  # TIOCSTI listed too
    )
    outcomes = _probe(seccomp.compile_filter(allow=everything))
    assert outcomes["socket"] == "EPERM"
    assert outcomes["fionread"] == "ok" and outcomes["tiocsti"] == "EPERM"


def test_every_allowlisted_syscall_exists_on_this_architecture() -> None:
    arch = pyseccomp.system_arch()
    assert len(MEASURED_SYSCALLS) >= 50 and not MEASURED_SYSCALLS & PROTOCOL_SYSCALLS
    for name in allowlist().syscalls:
        assert pyseccomp.resolve_syscall(arch, name) >= 0, name
