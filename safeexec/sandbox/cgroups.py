"""A control group per session, made by the host: memory, pids, a CPU cap and a CPU meter.

The host creates the group before the session runs any code and moves the session's first
process into it; everything the session forks stays inside. The kernel then charges to it what
rlimits cannot see — memfd, tmpfs and shmem pages, pipe and socket buffers — and counts the CPU
of every process that ever ran in it, reaped or not (an auto-reaped child's CPU reaches no
``/proc/<pid>/stat``). One small interface over both kernel layouts: cgroup v2 (one directory,
``memory.max``, ``pids.max``, ``cpu.max``, ``cpu.stat``) where its controllers are available,
else the v1 ``memory``, ``pids``, ``cpu`` and ``cpuacct`` hierarchies (one directory each).
Groups are nested below the host's own group in each hierarchy, so a host confined by its own
limits passes them on.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cache

__all__ = ["Controller", "SessionCgroup", "available", "create"]

_CPU_PERIOD_US = 100_000
_REMOVE_ATTEMPTS = 50
_REMOVE_PAUSE_SECONDS = 0.01
_METER_BYTES = 4096  # cpu.stat, memory.events, memory.oom_control: a few short lines each


class Controller(StrEnum):
    """What a session group enforces: one per confinement layer ``cgroup_<name>``."""

    MEMORY = "memory"
    PIDS = "pids"
    CPU = "cpu"  # the cap (cpu) and the meter (cpuacct on v1)


@dataclass(frozen=True, slots=True)
class _Place:
    """Where one controller's groups live: the host's own group in a mounted hierarchy."""

    parent: str  # a directory: <mount point><the host's group path>
    version: int  # 1 or 2


@cache
def _places() -> Mapping[str, _Place]:
    """Controller name (``memory``, ``pids``, ``cpu``, ``cpuacct``) → where to make groups.

    Read once per host process from /proc/self/mountinfo and /proc/self/cgroup; v2 wins for a
    controller it has enabled, since a controller is bound to one hierarchy at a time.
    """
    own: dict[str, str] = {}
    with open("/proc/self/cgroup") as fh:
        for line in fh:
            _id, names, path = line.rstrip("\n").split(":", 2)
            for name in names.split(",") if names else [""]:
                own[name] = path
    found: dict[str, _Place] = {}
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            before, _sep, after = line.rstrip("\n").partition(" - ")
            fields, tail = before.split(), after.split()
            if len(fields) < 5 or len(tail) < 3:
                continue
            fstype, root, mount_point = tail[0], fields[3], fields[4]
            if fstype == "cgroup2" and "" in own:
                parent = _beneath(mount_point, root, own[""])
                with contextlib.suppress(OSError), open(f"{parent}/cgroup.controllers") as fh2:
                    for name in fh2.read().split():
                        found[name] = _Place(parent=parent, version=2)
            elif fstype == "cgroup":
                for name in tail[2].split(","):
                    if name in ("memory", "pids", "cpu", "cpuacct") and name in own:
                        parent = _beneath(mount_point, root, own[name])
                        found.setdefault(name, _Place(parent=parent, version=1))
    return found


def _beneath(mount_point: str, root: str, group: str) -> str:
    """The directory of ``group`` (a path in the cgroup tree) in a mount of subtree ``root``."""
    relative = os.path.relpath(group, root) if root != "/" else group.lstrip("/")
    return os.path.normpath(os.path.join(mount_point, relative))


def _writable(directory: str) -> str:
    """Why groups cannot be made below ``directory`` ("" when they can)."""
    if not os.path.isdir(directory):
        return f"{directory} does not exist"
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"{directory} is not writable by this process (run as root or delegate it)"
    return ""


def available() -> dict[Controller, str]:
    """For each controller, "" when a session group can enforce it here, else why not."""
    places = _places()
    cpu_v2 = "cpu" in places and places["cpu"].version == 2
    needs = {
        Controller.MEMORY: ("memory",),
        Controller.PIDS: ("pids",),
        Controller.CPU: ("cpu",) if cpu_v2 else ("cpu", "cpuacct"),
    }
    out: dict[Controller, str] = {}
    for controller, names in needs.items():
        reasons = []
        for name in names:
            place = places.get(name)
            if place is None:
                reasons.append(f"no cgroup hierarchy has the {name} controller")
            elif why := _writable(place.parent):
                reasons.append(why)
            elif place.version == 2 and not _v2_delegated(place.parent, name):
                reasons.append(f"{name} is not enabled in {place.parent}/cgroup.subtree_control")
        out[controller] = "; ".join(reasons)
    return out


def _v2_delegated(parent: str, name: str) -> bool:
    """Whether groups below ``parent`` get controller ``name`` (enabling it if we may)."""
    control = os.path.join(parent, "cgroup.subtree_control")
    try:
        with open(control) as fh:
            if name in fh.read().split():
                return True
        with open(control, "w") as fh:
            fh.write(f"+{name}")
        return True
    except OSError:
        # EBUSY: the host's own group holds processes, so it cannot hand controllers down.
        return False


# A control file is read and written with one system call each, not through the text-file
# stack: a session's group costs some twenty of these (on v1, four hierarchies) at each open.
def _write(path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, value.encode("ascii"))
    finally:
        os.close(fd)


def _read(path: str) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks).decode("ascii")
    finally:
        os.close(fd)


def _stat_field(text: str, key: str) -> int:
    for line in text.splitlines():
        name, _sep, value = line.partition(" ")
        if name == key:
            return int(value)
    return 0


class SessionCgroup:
    """One session's groups (a directory per hierarchy); see :func:`create`."""

    def __init__(self, dirs: Mapping[str, tuple[str, int]]) -> None:
        self._dirs = dict(dirs)  # controller name -> (directory, version)
        # The meters every call reads twice, kept open: a reading is one pread, not an open,
        # two fstats, a read and a close (a warm round trip reads three).
        self._meters: dict[tuple[str, str], int] = {}
        have = set(self._dirs)
        controllers = {c for c in (Controller.MEMORY, Controller.PIDS) if c.value in have}
        if "cpu" in have and ("cpuacct" in have or self._dirs["cpu"][1] == 2):
            controllers.add(Controller.CPU)
        self._controllers = frozenset(controllers)
        # The limits last written (None until a write succeeded) and the layer report's
        # descriptions read back after it: an open whose limits the group already has (a warm
        # group written ahead, see ``WarmGroups``) writes and reads nothing.
        self._limits: tuple[int, int, float] | None = None
        self._descriptions: dict[Controller, str] = {}

    def _meter(self, hierarchy: str, name: str) -> str:
        """The text of counter file ``name`` in the group's ``hierarchy`` directory now, read
        through a descriptor kept open."""
        fd = self._meters.get((hierarchy, name))
        if fd is None:
            path = os.path.join(self._dirs[hierarchy][0], name)
            fd = self._meters[hierarchy, name] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        return os.pread(fd, _METER_BYTES, 0).decode("ascii")

    @property
    def controllers(self) -> frozenset[Controller]:
        """The controllers this group enforces (none once removed)."""
        return self._controllers

    def describe(self, controller: Controller) -> str:
        """Where ``controller`` is enforced and with what limit, for the layer report (read back
        from the kernel once per limits written)."""
        described = self._descriptions.get(controller)
        if described is None:
            described = self._descriptions[controller] = self._read_back(controller)
        return described

    def _read_back(self, controller: Controller) -> str:
        directory, version = self._dirs[controller.value]
        names = {
            (Controller.MEMORY, 1): "memory.limit_in_bytes",
            (Controller.MEMORY, 2): "memory.max",
            (Controller.PIDS, 1): "pids.max",
            (Controller.PIDS, 2): "pids.max",
            (Controller.CPU, 1): "cpu.cfs_quota_us",
            (Controller.CPU, 2): "cpu.max",
        }
        name = names[(controller, version)]
        try:
            value = _read(os.path.join(directory, name)).strip()
        except OSError as exc:
            value = f"unreadable ({exc.strerror})"
        return f"cgroup v{version} {directory}: {name}={value}"

    def set_limits(self, *, memory_bytes: int, max_processes: int, cpu_cores: float) -> None:
        """Write the limits (cheap, unlike :meth:`add`; nothing when the group has them
        already); raises ``OSError``."""
        wanted = (memory_bytes, max_processes, cpu_cores)
        if wanted == self._limits:
            return
        self._limits = None
        self._descriptions.clear()
        _set_limits(
            self._dirs, memory_bytes=memory_bytes, max_processes=max_processes, cpu_cores=cpu_cores
        )
        self._limits = wanted

    def add(self, pid: int) -> None:
        """Move process ``pid`` (not yet running user code) into every hierarchy's group.

        Waits for an RCU grace period (the kernel's cgroup_threadgroup_rwsem), milliseconds on
        a busy machine: do it ahead of time where possible."""
        for directory, _version in self._dirs.values():
            _write(os.path.join(directory, "cgroup.procs"), str(pid))

    def cpu_seconds(self) -> float:
        """CPU used by every process that ever ran in the group, exited ones included."""
        if "cpuacct" in self._dirs:
            return int(self._meter("cpuacct", "cpuacct.usage")) / 1e9
        return _stat_field(self._meter("cpu", "cpu.stat"), "usage_usec") / 1e6

    def memory_peak_bytes(self) -> int:
        """The most memory the group was ever charged (0 where the kernel does not say)."""
        directory, version = self._dirs["memory"]
        name = "memory.max_usage_in_bytes" if version == 1 else "memory.peak"
        try:
            return int(_read(os.path.join(directory, name)))
        except (OSError, ValueError):
            return 0

    def oom_kills(self) -> int:
        """How many processes the kernel killed for going over the group's memory limit."""
        name = "memory.oom_control" if self._dirs["memory"][1] == 1 else "memory.events"
        try:
            return _stat_field(self._meter("memory", name), "oom_kill")
        except (OSError, ValueError):
            return 0

    def pids(self) -> list[int]:
        """Host pids of the processes in the group now."""
        found: set[int] = set()
        for directory, _version in self._dirs.values():
            with contextlib.suppress(OSError, ValueError):
                found.update(int(p) for p in _read(os.path.join(directory, "cgroup.procs")).split())
        return sorted(found)

    def kill(self) -> None:
        """SIGKILL everything in the group until it is empty (or stops shrinking)."""
        for directory, version in self._dirs.values():
            if version == 2:  # one write kills the whole group, forks in flight included
                with contextlib.suppress(OSError):
                    _write(os.path.join(directory, "cgroup.kill"), "1")
        for _attempt in range(_REMOVE_ATTEMPTS):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(_REMOVE_PAUSE_SECONDS)

    def remove(self) -> None:
        """Kill everything inside, then remove the group's directories; idempotent."""
        self.kill()
        self._controllers = frozenset()
        self._limits = None
        self._descriptions.clear()
        meters, self._meters = list(self._meters.values()), {}
        for fd in meters:
            os.close(fd)
        for name, (directory, _version) in list(self._dirs.items()):
            for _attempt in range(_REMOVE_ATTEMPTS):
                try:
                    os.rmdir(directory)
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY:
                        break
                    time.sleep(_REMOVE_PAUSE_SECONDS)  # exiting tasks still leave the group
            del self._dirs[name]


def create(*, memory_bytes: int, max_processes: int, cpu_cores: float) -> SessionCgroup:
    """Make a session group with these limits in every hierarchy that has a controller for it.

    Raises ``OSError`` when a hierarchy that :func:`available` reports usable refuses; a
    controller that is not available here is left out (the layer report says so).
    """
    group = make()
    try:
        group.set_limits(
            memory_bytes=memory_bytes, max_processes=max_processes, cpu_cores=cpu_cores
        )
    except OSError:
        group.remove()
        raise
    return group


def make() -> SessionCgroup:
    """Make an empty group with no limits of its own yet (see :meth:`SessionCgroup.set_limits`)."""
    usable = available()
    places = _places()
    wanted: list[str] = []
    if not usable[Controller.MEMORY]:
        wanted.append("memory")
    if not usable[Controller.PIDS]:
        wanted.append("pids")
    if not usable[Controller.CPU]:
        wanted += ["cpu"] + (["cpuacct"] if places["cpu"].version == 1 else [])
    name = f"safeexec-{os.getpid()}-{secrets.token_hex(6)}"
    dirs: dict[str, tuple[str, int]] = {}
    try:
        for controller in wanted:
            place = places[controller]
            directory = os.path.join(place.parent, name)
            if place.version == 2 and any(d == directory for d, _v in dirs.values()):
                dirs[controller] = (directory, 2)  # v2: one directory holds every controller
                continue
            os.mkdir(directory, 0o755)
            dirs[controller] = (directory, place.version)
    except OSError:
        SessionCgroup(dirs).remove()
        raise
    return SessionCgroup(dirs)


def _set_limits(
    dirs: Mapping[str, tuple[str, int]], *, memory_bytes: int, max_processes: int, cpu_cores: float
) -> None:
    if "memory" in dirs:
        directory, version = dirs["memory"]
        if version == 2:
            _write(os.path.join(directory, "memory.max"), str(memory_bytes))
            with contextlib.suppress(FileNotFoundError):  # no swap accounting configured
                _write(os.path.join(directory, "memory.swap.max"), "0")
        else:
            _set_v1_memory(directory, str(memory_bytes))
    if "pids" in dirs:
        _write(os.path.join(dirs["pids"][0], "pids.max"), str(max_processes))
    if "cpu" in dirs:
        directory, version = dirs["cpu"]
        quota = max(1000, int(cpu_cores * _CPU_PERIOD_US))
        if version == 2:
            _write(os.path.join(directory, "cpu.max"), f"{quota} {_CPU_PERIOD_US}")
        else:
            _write(os.path.join(directory, "cpu.cfs_period_us"), str(_CPU_PERIOD_US))
            _write(os.path.join(directory, "cpu.cfs_quota_us"), str(quota))


def _set_v1_memory(directory: str, value: str) -> None:
    """Set v1's memory limit and its memory + swap limit (no escape into swap) to ``value``.

    The kernel refuses a memory limit above the memory + swap one (EINVAL): a group whose
    limits are raised gets the second first.
    """
    memory = os.path.join(directory, "memory.limit_in_bytes")
    raised = False
    try:
        _write(memory, value)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
        raised = True
    with contextlib.suppress(FileNotFoundError):  # no swap accounting configured
        _write(os.path.join(directory, "memory.memsw.limit_in_bytes"), value)
    if raised:
        _write(memory, value)
