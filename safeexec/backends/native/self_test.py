"""The layer self-test behind ``safeexec doctor``: which layers are active, and proof of each."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native.backend import NativeBackend
from safeexec.errors import BackendError
from safeexec.model.values import ExecRequest, Limits
from safeexec.sandbox.channel import ProtocolError
from safeexec.sandbox.ladder import Rung, meets, rung_of
from safeexec.sandbox.layers import Layer, LayerStatus
from safeexec.sandbox.protocol import ProbeOptions, ProbeVerdict

__all__ = ["DoctorReport", "LayerCheck", "diagnose"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerCheck:
    """One layer on this machine: can the kernel do it, did a session get it, did it hold."""

    layer: Layer
    supported: bool
    active: bool
    proven: bool | None  # None when no self-test exists for the layer
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DoctorReport:
    """Every layer's check, and the rung of the confinement ladder a session reached here."""

    checks: tuple[LayerCheck, ...]
    rung: Rung | None = None

    @property
    def ok(self) -> bool:
        """No layer reported active lets through what its self-test tries (a missing layer's
        failed self-test only confirms that it is missing)."""
        return not any(check.active and check.proven is False for check in self.checks)

    @property
    def complete(self) -> bool:
        """Every layer is active (whatever the kernel or the host could not give counts)."""
        return all(check.active for check in self.checks)

    @property
    def missing(self) -> tuple[Layer, ...]:
        """The layers a session here goes without, in layer order."""
        return tuple(check.layer for check in self.checks if not check.active)

    def unmet(self, *, rung: Rung | None, require: frozenset[Layer]) -> list[str]:
        """What a policy requiring ``rung`` and the layers ``require`` lacks here."""
        active = {check.layer: check for check in self.checks}
        unmet = [
            f"layer {layer.value}"
            for layer in Layer
            if layer in require and not active[layer].active
        ]
        if rung is not None and not meets(self.rung, rung):
            got = self.rung.value if self.rung is not None else "none"
            unmet.append(f"rung {rung.value} (this host gives {got})")
        return unmet


_SESSION_PROBE = """
import ctypes, json, os, resource, socket
out = {"pid": os.getpid(), "sid": os.getsid(0), "uid": os.getuid(), "cwd": os.getcwd()}
out["env"] = sorted(os.environ)
out["rlimits"] = {n: resource.getrlimit(getattr(resource, n))[1]
                  for n in ("RLIMIT_AS", "RLIMIT_NPROC", "RLIMIT_NOFILE", "RLIMIT_FSIZE",
                            "RLIMIT_CORE")}
libc = ctypes.CDLL(None, use_errno=True)
out["no_new_privs"] = libc.prctl(39, 0, 0, 0, 0)
header = (ctypes.c_uint32 * 2)(0x20080522, 0)
caps = (ctypes.c_uint32 * 6)()
libc.capget(header, caps)
out["capabilities"] = list(caps)
def attempt(action):
    try:
        action()
        return "allowed"
    except OSError as exc:
        return type(exc).__name__
out["read_proc_status"] = attempt(lambda: open("/proc/self/status").read())
# stat is not mediated by Landlock: only a private root hides the host's files and pids.
out["sees_host_file"] = os.path.exists(HOST_FILE)
out["sees_host_pid"] = os.path.exists("/proc/%d" % HOST_PID)
out["sees_own_pid_one"] = os.path.exists("/proc/1")
open("doctor-wrote-this.txt", "w").write("x")
out["socket_inet"] = attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
try:
    [0] * 10**10
    out["huge_list"] = "allowed"
except MemoryError:
    out["huge_list"] = "MemoryError"
print(json.dumps(out))
"""

_DAEMON_PROBE = """
import os, signal, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(3600)
    os._exit(0)
os.wait()
"""


_CGROUP_LAYERS = (Layer.CGROUP_MEMORY, Layer.CGROUP_PIDS, Layer.CGROUP_CPU)
_CGROUP_LIMITS = Limits(memory_bytes=128 << 20, max_processes=16, cpu_seconds=0.5)
# Four times the memory limit in memfds that are never mapped (RLIMIT_AS does not see them).
_MEMFD_PROBE = """
import os
held = []
try:
    while len(held) < 32:
        fd = os.memfd_create("doctor")
        os.posix_fallocate(fd, 0, 16 << 20)
        held.append(fd)
        print(len(held) << 24, flush=True)
except OSError:
    pass
"""
# Short-lived children the kernel reaps itself: their CPU reaches no /proc/<pid>/stat.
_REAPED_BURNER_PROBE = """
import os, signal, time
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
for _ in range(20):
    if os.fork() == 0:
        end = time.process_time() + 0.1
        while time.process_time() < end:
            pass
        os._exit(0)
    try:
        os.waitpid(-1, 0)  # with SIGCHLD ignored: blocks until the child is gone, then ECHILD
    except ChildProcessError:
        pass
"""
_FORK_PROBE = """
import os, time
n = 0
try:
    while n < 64:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
        n += 1
except OSError:
    pass
print(n)
"""


def _prove_cgroups(
    backend: NativeBackend, workdir: Path, blobs: BlobStore
) -> dict[Layer, tuple[bool, str]]:
    """A memfd bomb against memory.max, an auto-reaped burner against the CPU meter, a fork
    loop against pids.max; each in a session of small limits."""
    limits = _CGROUP_LIMITS
    proofs: dict[Layer, tuple[bool, str]] = {}
    with backend.open(SessionSpec(workdir=workdir, limits=limits, blobs=blobs)) as session:
        memfd = session.run(ExecRequest(action_id="doctor", code=_MEMFD_PROBE, limits=limits))
        lines = blobs.get(memfd.stdout).decode(errors="replace").split()
        held = max((int(x) for x in lines if x.isdigit()), default=0)
        proofs[Layer.CGROUP_MEMORY] = (
            held < limits.memory_bytes,
            f"memfd+fallocate held {held >> 20} MiB against {limits.memory_bytes >> 20} MiB "
            f"({memfd.status.value})",
        )
        burner = session.run(
            ExecRequest(action_id="doctor", code=_REAPED_BURNER_PROBE, limits=limits)
        )
        proofs[Layer.CGROUP_CPU] = (
            burner.status.value == "timeout" and "cpu" in burner.message,
            f"auto-reaped children burning 2 CPU-s against {limits.cpu_seconds:g} s: "
            f"{burner.status.value} {burner.message}".rstrip(),
        )
        forks = session.run(ExecRequest(action_id="doctor", code=_FORK_PROBE, limits=limits))
        text = blobs.get(forks.stdout).decode(errors="replace").strip()
        started = int(text) if text.isdigit() else -1
        in_group = set(session.process_ids()) <= set(session.cgroup_pids())
        proofs[Layer.CGROUP_PIDS] = (
            0 <= started < limits.max_processes and in_group,
            f"{started} of 64 forks succeeded under pids.max={limits.max_processes}; "
            f"every session process in the group: {in_group}",
        )
    return proofs


# An unnamed file (O_TMPFILE) must use up the session's bounded filesystem like a named one.
_DISK_PROBE = """
import json, os
before = os.statvfs(".")
fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o600)
os.write(fd, b"x" * (4 << 20))
after = os.statvfs(".")
print(json.dumps({"size": before.f_blocks * before.f_frsize,
                  "used": (before.f_bfree - after.f_bfree) * after.f_frsize}))
"""


def _prove_disk(backend: NativeBackend, blobs: BlobStore) -> tuple[LayerStatus, tuple[bool, str]]:
    """In a session with a workdir of its own: the workdir's filesystem is ``disk_bytes`` and
    an unnamed 4 MiB file takes 4 MiB of it."""
    with backend.open(SessionSpec(limits=Limits(), blobs=blobs)) as session:
        status = session.layers[Layer.DISK]
        result = session.run(ExecRequest(action_id="doctor", code=_DISK_PROBE))
    try:
        seen = json.loads(blobs.get(result.stdout).decode())
        size, used = int(seen["size"]), int(seen["used"])
    except (ValueError, KeyError, TypeError):
        return status, (False, f"the probe failed: {result.status.value} {result.message}")
    return status, (
        size == backend.disk_bytes and used >= 4 << 20,
        f"workdir filesystem of {size} bytes (disk_bytes={backend.disk_bytes}); "
        f"an O_TMPFILE of 4 MiB used {used >> 20} MiB of it",
    )


def diagnose(*, backend: NativeBackend | None = None) -> DoctorReport:
    """Report which layers are active here and prove, layer by layer, that each one blocks."""
    owned = backend is None
    backend = backend or NativeBackend()
    scratch = Path(tempfile.mkdtemp(prefix="safeexec-doctor-"))
    # Traversable (not listable) by a root host's session uids, as a default workdir's parent
    # is: a container's session then takes a uid of its own here as it would anywhere.
    scratch.chmod(0o711)
    try:
        return _diagnose(backend, scratch)
    finally:
        if owned:
            backend.close()
        shutil.rmtree(scratch, ignore_errors=True)


def _run_probe(layer: str, options: ProbeOptions, python: str) -> tuple[bool, str, int]:
    done = subprocess.run(
        [python, "-I", "-m", "safeexec.sandbox.probe", layer, options.to_argument()],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin"},
    )
    try:
        verdict = ProbeVerdict.from_line(done.stdout.strip().splitlines()[-1])
        return verdict.blocked, verdict.detail, done.returncode
    except (ProtocolError, IndexError):
        return (
            False,
            f"probe exited with {done.returncode}: {done.stderr.strip()[-300:]}",
            done.returncode,
        )


def _diagnose(backend: NativeBackend, scratch: Path) -> DoctorReport:
    supported = backend.supported
    proofs: dict[Layer, tuple[bool, str]] = {}
    blobs = BlobStore(scratch / "blobs")
    workdir = scratch / "work"
    workdir.mkdir()
    canary = scratch / "canary.txt"
    canary.write_text("doctor canary")
    canary.chmod(0o644)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        session = backend.open(SessionSpec(workdir=workdir, limits=Limits(), blobs=blobs))
    except BackendError as exc:
        listener.close()
        return DoctorReport(
            checks=tuple(
                LayerCheck(
                    layer=s.layer, supported=s.active, active=False, proven=None, detail=str(exc)
                )
                for s in supported.values()
            ),
            rung=None,
        )
    with session:
        active = dict(session.layers)
        worker_pid = session.pid or 0
        probe = _SESSION_PROBE.replace("HOST_FILE", repr(str(canary)))
        probe = probe.replace("HOST_PID", str(os.getpid()))
        result = session.run(ExecRequest(action_id="doctor", code=probe))
        try:
            seen = json.loads(blobs.get(result.stdout).decode())
        except ValueError:
            seen = {}
        proofs.update(_judge_session(seen, worker_pid, workdir, session.limits))
    # Tree kill: a daemonised, SIGTERM-ignoring grandchild must die with its session.
    with backend.open(SessionSpec(workdir=workdir, limits=Limits(), blobs=blobs)) as daemon_session:
        daemon_session.run(ExecRequest(action_id="doctor", code=_DAEMON_PROBE))
        pids = daemon_session.process_ids()
    survivors = [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    if any(supported[layer].active for layer in _CGROUP_LAYERS):
        proofs.update(_prove_cgroups(backend, workdir, blobs))
    if supported[Layer.DISK].active:
        active[Layer.DISK], proofs[Layer.DISK] = _prove_disk(backend, blobs)
    proofs[Layer.PIDNS] = (
        len(pids) >= 2 and not survivors,
        f"a setsid'd grandchild ignoring SIGTERM died with its session ({len(pids)} processes)"
        if not survivors
        else f"survivors after close: {survivors}",
    )
    read_only = _runtime_paths(backend.python)
    options = ProbeOptions(
        read_only=tuple(read_only),
        canary_file=str(canary),
        port=listener.getsockname()[1],
        host_pid=os.getpid(),
    )
    for layer in (Layer.LANDLOCK, Layer.LANDLOCK_NET, Layer.LANDLOCK_SCOPE):
        if supported[layer].active:
            blocked, detail, _code = _run_probe(layer.value, options, backend.python)
            earlier = proofs.get(layer)
            if earlier is not None:
                blocked, detail = blocked and earlier[0], f"{earlier[1]}; alone: {detail}"
            proofs[layer] = (blocked, detail)
    if supported[Layer.SECCOMP].active:
        _blocked, detail, code = _run_probe(Layer.SECCOMP.value, options, backend.python)
        killed = code == -signal.SIGSYS
        earlier = proofs.get(Layer.SECCOMP, (True, ""))
        proofs[Layer.SECCOMP] = (
            killed and earlier[0],
            f"{earlier[1]}; alone: socket(AF_INET) refused, AIO, inotify, fanotify and "
            "memfd_secret refused, bpf() killed by SIGSYS"
            if killed
            else f"{earlier[1]}; alone: {detail}",
        )
    listener.close()
    checks = []
    for layer in Layer:
        status = active.get(layer)
        proof = proofs.get(layer)
        checks.append(
            LayerCheck(
                layer=layer,
                supported=supported[layer].active,
                active=bool(status and status.active),
                proven=None if proof is None else proof[0],
                detail=(status.detail if status else supported[layer].detail)
                + (f" | self-test: {proof[1]}" if proof else ""),
            )
        )
    return DoctorReport(checks=tuple(checks), rung=rung_of(active))


def _runtime_paths(python: str) -> list[str]:
    code = (
        "import json, safeexec.sandbox.zygote as z; print(json.dumps(z.runtime_read_only_paths()))"
    )
    done = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, check=True)
    return [str(p) for p in json.loads(done.stdout)]


def _nproc_bounded(value: object, budget: int) -> bool:
    """Whether an RLIMIT_NPROC read back is the session's budget, or that budget on top of its
    uid's other tasks: set, and never unlimited."""
    return isinstance(value, int) and value != resource.RLIM_INFINITY and value >= budget


def _same_namespace(pid: int, kind: str) -> bool | None:
    try:
        return os.stat(f"/proc/{pid}/ns/{kind}").st_ino == os.stat(f"/proc/self/ns/{kind}").st_ino
    except OSError:
        return None


def _judge_session(
    seen: Mapping[str, object], worker_pid: int, workdir: Path, limits: Limits
) -> dict[Layer, tuple[bool, str]]:
    """Turn what a probe session saw (and what the host sees of it) into per-layer proofs."""
    if not seen:
        return {}
    proofs: dict[Layer, tuple[bool, str]] = {}
    proofs[Layer.SESSION] = (seen.get("sid") == seen.get("pid"), f"sid={seen.get('sid')}")
    wrote = workdir / "doctor-wrote-this.txt"
    proofs[Layer.WORKDIR] = (
        wrote.is_file(),
        f"cwd={seen.get('cwd')}, a file written there reached {workdir}",
    )
    wrote.unlink(missing_ok=True)
    proofs[Layer.MOUNTNS] = (
        seen.get("sees_host_file") is False and seen.get("cwd") != str(workdir),
        f"stat of a host file -> {'found' if seen.get('sees_host_file') else 'nothing'}; "
        f"cwd={seen.get('cwd')}",
    )
    proofs[Layer.PROC] = (
        seen.get("sees_host_pid") is False and seen.get("sees_own_pid_one") is True,
        f"/proc/<host pid> -> {'found' if seen.get('sees_host_pid') else 'nothing'}; "
        f"/proc/1 is the worker: {seen.get('sees_own_pid_one')}",
    )
    env = seen.get("env")
    allowed_env = {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "MPLBACKEND", "MPLCONFIGDIR"}
    proofs[Layer.ENV] = (
        isinstance(env, list) and set(env) <= allowed_env,
        f"variables: {env}",
    )
    rlimits = seen.get("rlimits")
    if isinstance(rlimits, dict):
        ok = (
            # On a shared uid the budget sits on top of that uid's other tasks (see confine).
            _nproc_bounded(rlimits.get("RLIMIT_NPROC"), limits.max_processes)
            and rlimits.get("RLIMIT_NOFILE") == limits.max_open_files
            and rlimits.get("RLIMIT_FSIZE") == limits.file_size_bytes
            and rlimits.get("RLIMIT_CORE") == 0
            and seen.get("huge_list") == "MemoryError"
        )
        proofs[Layer.RLIMITS] = (ok, f"{rlimits}; [0]*10**10 -> {seen.get('huge_list')}")
    for layer, kind in ((Layer.NETNS, "net"), (Layer.IPCNS, "ipc"), (Layer.PIDNS, "pid")):
        same = _same_namespace(worker_pid, kind)
        proofs[layer] = (same is False, f"worker's {kind} namespace differs from the host's")
    caps = seen.get("capabilities")
    proofs[Layer.PRIVDROP] = (
        isinstance(caps, list) and not any(caps),
        f"uid={seen.get('uid')} capabilities={caps}",
    )
    proofs[Layer.OWN_UID] = (
        seen.get("uid") != os.geteuid(),
        f"the session's uid {seen.get('uid')}, the host's {os.geteuid()}",
    )
    proofs[Layer.NO_NEW_PRIVS] = (
        seen.get("no_new_privs") == 1,
        f"prctl -> {seen.get('no_new_privs')}",
    )
    proofs[Layer.LANDLOCK] = (
        seen.get("read_proc_status") == "PermissionError",
        f"open('/proc/self/status') -> {seen.get('read_proc_status')}",
    )
    proofs[Layer.SECCOMP] = (
        seen.get("socket_inet") == "PermissionError",
        f"socket(AF_INET) -> {seen.get('socket_inet')}",
    )
    return proofs
