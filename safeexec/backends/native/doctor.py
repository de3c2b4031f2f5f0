"""The layer self-test behind ``safeexec doctor``: which layers are active, and proof of each."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from safeexec.backends.base import SessionSpec
from safeexec.backends.native.backend import NativeBackend
from safeexec.blobs import BlobStore
from safeexec.errors import BackendError
from safeexec.model import ExecRequest, Limits
from safeexec.sandbox.channel import ProtocolError
from safeexec.sandbox.layers import Layer
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
    checks: tuple[LayerCheck, ...]

    @property
    def ok(self) -> bool:
        """Every supported layer is active and no self-test failed."""
        return all(
            (check.active or not check.supported) and check.proven is not False
            for check in self.checks
        )


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
out["read_etc_passwd"] = attempt(lambda: open("/etc/passwd").read())
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


def diagnose(*, backend: NativeBackend | None = None) -> DoctorReport:
    """Report which layers are active here and prove, layer by layer, that each one blocks."""
    owned = backend is None
    backend = backend or NativeBackend()
    scratch = Path(tempfile.mkdtemp(prefix="safeexec-doctor-"))
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
            )
        )
    with session:
        active = dict(session.layers)
        worker_pid = session.pid or 0
        result = session.run(ExecRequest(action_id="doctor", code=_SESSION_PROBE))
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
            f"{earlier[1]}; alone: socket(AF_INET) refused, bpf() killed by SIGSYS"
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
    return DoctorReport(checks=tuple(checks))


def _runtime_paths(python: str) -> list[str]:
    code = (
        "import json, safeexec.sandbox.zygote as z; print(json.dumps(z.runtime_read_only_paths()))"
    )
    done = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, check=True)
    return [str(p) for p in json.loads(done.stdout)]


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
    proofs[Layer.WORKDIR] = (seen.get("cwd") == str(workdir), f"cwd={seen.get('cwd')}")
    env = seen.get("env")
    allowed_env = {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "MPLBACKEND", "MPLCONFIGDIR"}
    proofs[Layer.ENV] = (
        isinstance(env, list) and set(env) <= allowed_env,
        f"variables: {env}",
    )
    rlimits = seen.get("rlimits")
    if isinstance(rlimits, dict):
        ok = (
            rlimits.get("RLIMIT_NPROC") == limits.max_processes
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
    uid_ok = os.geteuid() != 0 or seen.get("uid") != 0
    proofs[Layer.PRIVDROP] = (
        uid_ok and isinstance(caps, list) and not any(caps),
        f"uid={seen.get('uid')} capabilities={caps}",
    )
    proofs[Layer.NO_NEW_PRIVS] = (
        seen.get("no_new_privs") == 1,
        f"prctl -> {seen.get('no_new_privs')}",
    )
    proofs[Layer.LANDLOCK] = (
        seen.get("read_etc_passwd") == "PermissionError",
        f"open('/etc/passwd') -> {seen.get('read_etc_passwd')}",
    )
    proofs[Layer.SECCOMP] = (
        seen.get("socket_inet") == "PermissionError",
        f"socket(AF_INET) -> {seen.get('socket_inet')}",
    )
    return proofs
