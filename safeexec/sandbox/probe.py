"""Single-layer probes for ``safeexec doctor``: apply one layer alone, then try what it forbids.

Run as ``python -I -m safeexec.sandbox.probe <layer> <options-json>`` in a throwaway process;
prints one JSON object ``{"blocked": bool, "detail": str}``. A probe that cannot even apply its
layer reports ``blocked: false`` with the reason, so a layer that fails open is never reported
as working. Probing one layer at a time shows that each layer holds on its own, not just the
stack as a whole.
"""

from __future__ import annotations

import ctypes
import os
import socket
import sys
import tempfile

from safeexec.sandbox import landlock, privileges, seccomp
from safeexec.sandbox.protocol import ProbeOptions, ProbeVerdict
from safeexec.sandbox.syscalls import syscall_number

__all__ = ["PROBES", "main"]


def _landlock_alone(read_only: list[str]) -> None:
    privileges.set_no_new_privs()
    landlock.restrict(read_only=read_only, read_write=(tempfile.mkdtemp(),))


def _probe_landlock(options: ProbeOptions) -> tuple[bool, str]:
    _landlock_alone(list(options.read_only))
    try:
        with open(options.canary_file) as fh:
            fh.read()
    except PermissionError:
        return True, "reading a world-readable file outside the allowed paths: EACCES"
    return False, "a file outside the allowed paths was readable"


def _probe_landlock_net(options: ProbeOptions) -> tuple[bool, str]:
    _landlock_alone(list(options.read_only))
    try:
        socket.create_connection(("127.0.0.1", options.port), timeout=2)
    except PermissionError:
        return True, "TCP connect to a listening host loopback port: EACCES"
    except OSError as exc:
        return False, f"connect failed for another reason: {exc}"
    return False, "connected to the host's loopback listener"


def _probe_landlock_scope(options: ProbeOptions) -> tuple[bool, str]:
    _landlock_alone(list(options.read_only))
    try:
        os.kill(options.host_pid, 0)
    except PermissionError:
        return True, "signalling a process outside the domain: EPERM"
    return False, "a process outside the domain could be signalled"


def _probe_seccomp(options: ProbeOptions) -> tuple[bool, str]:
    privileges.set_no_new_privs()
    seccomp.load_compiled(seccomp.compile_filter())
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    except PermissionError:
        pass
    else:
        return False, "socket(AF_INET) was allowed"
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall(syscall_number("bpf"), 0, 0, 0)  # killed here: SIGSYS
    return False, "bpf() returned instead of killing the process"


PROBES = {
    "landlock": _probe_landlock,
    "landlock_net": _probe_landlock_net,
    "landlock_scope": _probe_landlock_scope,
    "seccomp": _probe_seccomp,
}


def main() -> None:
    layer, options = sys.argv[1], ProbeOptions.from_argument(sys.argv[2])
    try:
        blocked, detail = PROBES[layer](options)
    except OSError as exc:
        blocked, detail = False, f"could not apply the layer: {exc}"
    print(ProbeVerdict(blocked=blocked, detail=detail).to_line())


if __name__ == "__main__":
    main()
