"""Run a command as it would run in a container or on an unprivileged host, on this machine.

No container daemon: the launcher (started as root) changes its own process the way a container
runtime changes a container's first process, then ``execve`` s the command. An
:class:`Environment` says what changes:

- ``seccomp``: a filter like a runtime's default profile, loaded *without* ``no_new_privs`` (as
  runtimes do): ``unshare``, ``setns``, ``mount`` and the other mount calls fail with EPERM,
  ``clone`` with any namespace flag fails with EPERM, ``clone3`` with ENOSYS (so the C library
  falls back to ``clone``, whose flags the filter can read);
- ``caps``: the capability bounding, permitted, effective and inheritable sets cut to a set
  (Docker's default: no ``CAP_SYS_ADMIN``, ``CAP_SYS_PTRACE``, ``CAP_NET_ADMIN``...);
- ``uid``: the command runs as that uid (real, effective and saved), no supplementary groups;
- ``cgroup`` False: no writable cgroup (an empty read-only tmpfs over ``/sys/fs/cgroup``, as a
  container sees a read-only one);
- ``cgroup2``: a container on a cgroup v2 host: the command runs in a fresh group of the
  machine's unified hierarchy, entered through a cgroup namespace (``0::/`` is its own group),
  with ``/sys/fs/cgroup`` a read-write cgroup2 mount of that group and nothing else; the
  launcher waits for it, then kills what is left in the group and removes it;
- ``userns``, ``hidden_runtime``, ``landlock``: see the presets below.

Everything happens in a private mount namespace: the interpreter under ``/root`` (0700) is
re-exposed read-only beneath a world-traversable ``/root``, as a container image or a shared
host installs Python where every uid can run it. ``--env NAME`` picks one of
:data:`ENVIRONMENTS`:

- ``host``: nothing changed (root with namespaces and cgroups: the ``full`` rung);
- ``container-root``: the container filter and capabilities, uid 0, no writable cgroup
  (``docker run`` as root);
- ``container-root-cgroup``: the same with the host's cgroups writable (``--cgroupns=private``
  and a read-write ``/sys/fs/cgroup``);
- ``container-root-cgroup2``: the same on a cgroup v2 host (``--cgroupns=private``, a
  read-write ``/sys/fs/cgroup``): the only writable group is the container's own;
- ``container-root-no-capabilities``: ``container-root`` with every capability dropped
  (Kubernetes ``capabilities: {drop: [ALL]}``);
- ``container-root-hidden-python``: ``container-root`` with the interpreter beneath ``/root``;
- ``container-nobody``: the container filter and capabilities, uid 65534 (``docker run -u``);
- ``nobody``: uid 65534, no filter, no writable cgroup (an unprivileged host with user
  namespaces);
- ``no-landlock``: ``nobody`` on a kernel without Landlock (its calls fail with ENOSYS);
- ``userns-root``: root of a user namespace that maps root alone (``unshare -r``), in which
  no user namespace may nest (a rootless runtime).

Usage: ``python tests/rungs/launcher.py --env container-root -- python -m pytest ...``.
Lives in ``tests/`` (not the wheel): it needs root, changes this machine's view only inside its
own namespace, and exists to test the ladder.
"""

from __future__ import annotations

import argparse
import ctypes
import errno
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import pyseccomp

from safeexec.sandbox import namespaces
from safeexec.sandbox.syscalls import check, libc

__all__ = ["ENVIRONMENTS", "Environment", "command", "main"]

# Docker's default capability set (moby's oci/caps/defaults.go).
DOCKER_CAPABILITIES = frozenset(
    {
        0,  # CHOWN
        1,  # DAC_OVERRIDE
        3,  # FOWNER
        4,  # FSETID
        5,  # KILL
        6,  # SETGID
        7,  # SETUID
        8,  # SETPCAP
        10,  # NET_BIND_SERVICE
        13,  # NET_RAW
        18,  # SYS_CHROOT
        27,  # MKNOD
        29,  # AUDIT_WRITE
        31,  # SETFCAP
    }
)
_CAP_LAST = 63
_CLONE_NEWCGROUP = 0x02000000
_MS_NOSUID = 0x2
_PR_CAPBSET_DROP = 24
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_NAMESPACE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
    0x00000080,  # CLONE_NEWTIME
)
_REFUSED = (
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
)
_LANDLOCK = ("landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self")
NOBODY = 65534


@dataclass(frozen=True, slots=True, kw_only=True)
class Environment:
    """What the launcher changes before it runs the command."""

    seccomp: bool
    caps: frozenset[int] | None  # the capability set the command keeps (None: all of root's)
    uid: int | None
    cgroup: bool  # leave the host's cgroups visible (as root: writable)
    userns: bool = False  # root of a user namespace of its own (rootless runtimes)
    # The interpreter under a directory only root may walk (as a container image that installs
    # Python beneath /root): sessions cannot take a uid of their own.
    hidden_runtime: bool = False
    landlock: bool = True  # False: landlock_* fail with ENOSYS, as on a kernel without it
    cgroup2: bool = False  # a group of its own in a cgroup namespace, v2 only (see above)


ENVIRONMENTS = {
    "host": Environment(seccomp=False, caps=None, uid=None, cgroup=True),
    "container-root": Environment(seccomp=True, caps=DOCKER_CAPABILITIES, uid=None, cgroup=False),
    "container-nobody": Environment(
        seccomp=True, caps=DOCKER_CAPABILITIES, uid=NOBODY, cgroup=False
    ),
    "nobody": Environment(seccomp=False, caps=None, uid=NOBODY, cgroup=False),
    "container-root-cgroup": Environment(
        seccomp=True, caps=DOCKER_CAPABILITIES, uid=None, cgroup=True
    ),
    "container-root-cgroup2": Environment(
        seccomp=True, caps=DOCKER_CAPABILITIES, uid=None, cgroup=True, cgroup2=True
    ),
    "container-root-no-capabilities": Environment(
        seccomp=True, caps=frozenset(), uid=None, cgroup=False
    ),
    "container-root-hidden-python": Environment(
        seccomp=True, caps=DOCKER_CAPABILITIES, uid=None, cgroup=False, hidden_runtime=True
    ),
    "no-landlock": Environment(seccomp=False, caps=None, uid=NOBODY, cgroup=False, landlock=False),
    "userns-root": Environment(seccomp=False, caps=None, uid=None, cgroup=False, userns=True),
}


def command(env: str, argv: Sequence[str]) -> list[str]:
    """The argv that runs ``argv`` under the preset ``env`` (for tests and the Makefile)."""
    return [sys.executable, os.path.abspath(__file__), "--env", env, "--", *argv]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _filter(*, container: bool, landlock: bool) -> pyseccomp.SyscallFilter:
    rules = pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    eperm = pyseccomp.ERRNO(errno.EPERM)
    enosys = pyseccomp.ERRNO(errno.ENOSYS)
    for name in _REFUSED if container else ():
        rules.add_rule(eperm, name)
    for flag in _NAMESPACE_FLAGS if container else ():
        rules.add_rule(eperm, "clone", pyseccomp.Arg(0, pyseccomp.MASKED_EQ, flag, flag))
    if container:
        rules.add_rule(enosys, "clone3")
    for name in () if landlock else _LANDLOCK:
        rules.add_rule(enosys, name)
    # A runtime loads its profile while privileged and does not set no_new_privs: the command
    # must not inherit it from us (libseccomp sets it by default).
    rules.set_attr(pyseccomp.Attr.CTL_NNP, 0)
    return rules


def _restrict_capabilities(keep: frozenset[int]) -> None:
    for cap in range(_CAP_LAST + 1):
        if cap in keep:
            continue
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            if ctypes.get_errno() == errno.EINVAL:
                break  # past the kernel's last capability
            check(-1, f"PR_CAPBSET_DROP {cap}")
    mask = [0, 0]
    for cap in keep:
        mask[cap // 32] |= 1 << (cap % 32)
    header = _CapHeader(version=_LINUX_CAPABILITY_VERSION_3, pid=0)
    data = (_CapData * 2)(*(_CapData(m, m, m) for m in mask))
    check(libc.capset(ctypes.byref(header), ctypes.byref(data)), "capset")


def _expose_interpreter() -> None:
    """Cover ``/root`` (0700) with a tmpfs holding only the interpreter's tree, read-only."""
    prefix = os.path.realpath(sys.base_prefix)
    if not prefix.startswith("/root/"):
        return
    fd = os.open(prefix, os.O_PATH | os.O_DIRECTORY)
    namespaces.mount_tmpfs("/root")
    os.makedirs(prefix)
    namespaces.mount_bind(fd, prefix, read_only=True)
    os.close(fd)


def _enter_user_namespace() -> None:
    """Become root of a new user namespace that maps root alone (``unshare -r``), in a mount
    namespace it owns, in which no user namespace may nest.

    Only a process outside the namespace may map more than its own id: the launcher forks,
    the child unshares, the parent writes the child's maps and then waits to pass on its
    exit status."""
    ready_r, ready_w = os.pipe()
    mapped_r, mapped_w = os.pipe()
    child = os.fork()
    if child:
        os.read(ready_r, 1)
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{child}/{name}", "w") as fh:
                fh.write("0 0 1")  # root alone, as `unshare -r` maps it
        os.write(mapped_w, b"x")
        _pid, status = os.waitpid(child, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    namespaces.unshare(namespaces.CLONE_NEWUSER | namespaces.CLONE_NEWNS)
    os.write(ready_w, b"x")
    os.read(mapped_r, 1)
    for fd in (ready_r, ready_w, mapped_r, mapped_w):
        os.close(fd)
    # No user namespace may nest in this one (a limit of this namespace, set from inside).
    with open("/proc/sys/user/max_user_namespaces", "w") as fh:
        fh.write("0")


def _hide_cgroups() -> None:
    if os.path.isdir("/sys/fs/cgroup"):
        namespaces.mount_tmpfs("/sys/fs/cgroup")
        namespaces.remount_read_only("/sys/fs/cgroup")


def unified_mount() -> str:
    """Where this process sees the machine's whole unified (cgroup2) hierarchy mounted."""
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            before, _sep, after = line.partition(" - ")
            fields = before.split()
            if after.split()[:1] == ["cgroup2"] and fields[3] == "/":
                return fields[4]
    raise SystemExit("no cgroup2 mount of the whole hierarchy here")


def _run_in_group_of_its_own() -> None:
    """Fork: the child returns in a fresh v2 group; the parent waits for it, kills what is left
    in the group, removes it (and everything made below it) and exits with its status."""
    root = unified_mount()
    # A runtime hands the container's group every controller the hierarchy offers it.
    with open(os.path.join(root, "cgroup.controllers")) as fh:
        offered = set(fh.read().split())
    for name in sorted(offered & {"memory", "pids", "cpu"}):
        with open(os.path.join(root, "cgroup.subtree_control"), "w") as fh:
            fh.write(f"+{name}")
    group = os.path.join(root, f"safeexec-rung-{os.getpid()}")
    os.mkdir(group)
    child = os.fork()
    if child == 0:
        with open(os.path.join(group, "cgroup.procs"), "w") as fh:
            fh.write(str(os.getpid()))
        return
    _pid, status = os.waitpid(child, 0)
    remove_group(group)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def remove_group(group: str) -> None:
    """Kill every process in the v2 ``group`` and its descendants, then remove them all."""
    with open(os.path.join(group, "cgroup.kill"), "w") as fh:
        fh.write("1")
    for _attempt in range(500):  # killed processes leave the group within milliseconds
        with open(os.path.join(group, "cgroup.events")) as fh:
            if "populated 0" in fh.read():
                break
        time.sleep(0.01)
    for directory, _dirs, _files in os.walk(group, topdown=False):
        os.rmdir(directory)


def _mount_own_cgroup2() -> None:
    """In a new cgroup namespace, replace every cgroup mount by one cgroup2 mount of our group."""
    namespaces.unshare(_CLONE_NEWCGROUP)
    namespaces.detach("/sys/fs/cgroup")
    target = b"/sys/fs/cgroup"
    check(libc.mount(b"cgroup2", target, b"cgroup2", ctypes.c_ulong(_MS_NOSUID), None), "mount")


def enter(env: Environment) -> None:
    """Change this process as ``env`` says (order matters: mounts, then the filter while
    still privileged, then capabilities, then the uid)."""
    if os.geteuid() != 0:
        raise SystemExit("the rung launcher must start as root")
    namespaces.unshare(namespaces.CLONE_NEWNS)
    namespaces.make_root_private()
    if (env.seccomp or env.uid is not None) and not env.hidden_runtime:
        _expose_interpreter()  # a container's or a shared host's Python is world-readable
    if not env.cgroup:
        _hide_cgroups()
    if env.cgroup2:
        _mount_own_cgroup2()
    if env.userns:
        _enter_user_namespace()
    if env.seccomp or not env.landlock:
        _filter(container=env.seccomp, landlock=env.landlock).load()
    if env.caps is not None:
        _restrict_capabilities(env.caps)
    if env.uid is not None:
        os.setgroups([])
        os.setresgid(env.uid, env.uid, env.uid)
        os.setresuid(env.uid, env.uid, env.uid)
        os.environ["HOME"] = "/tmp"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", choices=sorted(ENVIRONMENTS), required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command_argv = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command_argv:
        parser.error("name a command after --")
    env = ENVIRONMENTS[args.env]
    if env.cgroup2:
        _run_in_group_of_its_own()
    enter(env)
    os.execvp(command_argv[0], command_argv)


if __name__ == "__main__":
    main()
