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

from safeexec.sandbox import cgroup_v2

__all__ = ["Controller", "SessionCgroup", "available", "create", "unavailable"]

_CPU_PERIOD_US = 100_000
_REMOVE_ATTEMPTS = 50
_REMOVE_PAUSE_SECONDS = 0.01
_V1_NAMES = ("memory", "pids", "cpu", "cpuacct")
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
def _v1_places() -> Mapping[str, _Place]:
    """Controller name (``memory``, ``pids``, ``cpu``, ``cpuacct``) → its v1 hierarchy's place,
    read once per host process from /proc/self/mountinfo and /proc/self/cgroup."""
    own: dict[str, str] = {}
    for line in _read("/proc/self/cgroup").splitlines():
        _id, names, path = line.split(":", 2)
        for name in names.split(","):
            own[name] = path
    found: dict[str, _Place] = {}
    for line in _read("/proc/self/mountinfo").splitlines():
        before, _sep, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] != "cgroup":
            continue
        root, mount_point = fields[3], fields[4]
        for name in tail[2].split(","):
            if name in _V1_NAMES and name in own:
                found.setdefault(name, _Place(_beneath(mount_point, root, own[name]), 1))
    return found


@cache
def _subtree() -> cgroup_v2.Subtree:
    """The cgroup v2 subtree session groups are made in, made usable once per host process
    (which may move the host into a leaf): the controllers no v1 hierarchy has are wanted
    from it, all of them on a v2-only host."""
    configured = os.environ.get(cgroup_v2.PARENT_VARIABLE) or None
    found = cgroup_v2.locate(_read("/proc/self/mountinfo"), _read("/proc/self/cgroup"), configured)
    if found.problem:
        return cgroup_v2.Subtree(directory="", problem=found.problem)
    wanted = [name for name in ("memory", "pids", "cpu") if name not in _v1_places()]
    return cgroup_v2.delegate(found.directory, wanted, delegated=found.delegated)


def _places() -> Mapping[str, _Place]:
    """Controller name → where to make its groups: the v2 subtree for a controller it hands
    down (a controller is bound to one hierarchy at a time), else its v1 hierarchy."""
    found = dict(_v1_places())
    subtree = _subtree()
    for name in subtree.controllers & {"memory", "pids", "cpu"}:
        found[name] = _Place(parent=subtree.directory, version=2)
    return found


def _core() -> str:
    """The v2 subtree to make every session a leaf in, controllers or not ("" for none): on a
    host with no v1 hierarchy for the session controllers. A leaf alone still holds every
    process of the session, however it forked, and ``cgroup.kill`` ends them all at once."""
    return "" if _v1_places() else _subtree().directory


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
    subtree = _subtree()
    # v1 meters CPU in a hierarchy of its own (cpuacct); v2 in the cpu controller's cpu.stat.
    cpu_v2 = places["cpu"].version == 2 if "cpu" in places else "cpu" not in _v1_places()
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
            if place is not None:
                if why := _writable(place.parent):
                    reasons.append(why)
            elif name in subtree.missing:
                reasons.append(subtree.missing[name])
            elif subtree.problem and name in ("memory", "pids", "cpu"):
                reasons.append(f"no v1 {name} hierarchy, and cgroup v2: {subtree.problem}")
            else:
                reasons.append(f"no cgroup hierarchy has the {name} controller")
        out[controller] = "; ".join(reasons)
    return out


def unavailable() -> str:
    """Why no session group can be made here at all ("" when one can: a controller is
    available, or a v2 subtree takes leaves without one)."""
    reasons = available()
    if not all(reasons.values()) or _core():
        return ""
    return "; ".join(dict.fromkeys(reasons.values()))


# A control file is read and written with one system call each, not through the text-file
# stack: a session's group costs some twenty of these (on v1, four hierarchies) at each open.
_read, _write = cgroup_v2.read_control, cgroup_v2.write_control


def _stat_field(text: str, key: str) -> int:
    for line in text.splitlines():
        name, _sep, value = line.partition(" ")
        if name == key:
            return int(value)
    return 0


class SessionCgroup:
    """One session's groups (a directory per hierarchy); see :func:`create`."""

    def __init__(self, dirs: Mapping[str, tuple[str, int]]) -> None:
        # Controller name -> (directory, version); "" names a v2 leaf held for its processes
        # alone (cgroup.procs, cgroup.kill), with or without controllers.
        self._dirs = dict(dirs)
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
        for directory in self._directories():
            _write(os.path.join(directory, "cgroup.procs"), str(pid))

    def _directories(self) -> list[str]:
        """Each of the group's directories once (v2 has one for every controller)."""
        return list(dict.fromkeys(directory for directory, _version in self._dirs.values()))

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
        for directory in self._directories():
            with contextlib.suppress(OSError, ValueError):
                found.update(int(p) for p in _read(os.path.join(directory, "cgroup.procs")).split())
        return sorted(found)

    def kill(self) -> None:
        """SIGKILL everything in the group until it is empty (or stops shrinking)."""
        for directory, version in dict(self._dirs.values()).items():
            if version == 2:  # one write kills the whole group, forks in flight included
                with contextlib.suppress(OSError):  # before Linux 5.14: signals below
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
        if core := _core():  # v2: one leaf, whatever controllers the subtree hands down
            os.mkdir(os.path.join(core, name), 0o755)
            dirs[""] = (os.path.join(core, name), 2)
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
