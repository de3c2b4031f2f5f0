"""Run under :mod:`launcher` by ``test_rungs.py``: open a native and a restricted session, run
code, and confine throwaway children in the production order and in regressed orders; print
one JSON object with what each saw.

Not a test module (no ``test_`` prefix): it runs in a simulated environment, not in pytest.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from safeexec import Session
from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.errors import BackendUnavailable
from safeexec.sandbox import seccomp
from safeexec.sandbox.confine import ORDER, Confinement, Placement, Step, confine
from safeexec.sandbox.protocol import SessionConfig
from safeexec.sandbox.session_env import base_environment
from safeexec.sandbox.zygote import runtime_read_only_paths

# The regressions a test must catch: Landlock or seccomp before no_new_privs.
REGRESSED = {
    "landlock_before_no_new_privs": (
        Step.PRIVDROP,
        Step.LANDLOCK,
        Step.NO_NEW_PRIVS,
        Step.SECCOMP,
    ),
    "seccomp_before_no_new_privs": (
        Step.PRIVDROP,
        Step.SECCOMP,
        Step.NO_NEW_PRIVS,
        Step.LANDLOCK,
    ),
}


def _run(mode: str) -> dict[str, object]:
    """Run code under the default pack; its refusal, if it refuses this rung."""
    with (
        tempfile.TemporaryDirectory() as state,
        Session(mode=mode, state_dir=Path(state)) as session,
    ):
        try:
            outcome = session.run("print(6 * 7)")
        except BackendUnavailable as exc:
            return {"refused": str(exc)}
        return {
            "text": outcome.observation.text,
            "result_rung": outcome.result.rung if outcome.result is not None else None,
            "audit_rung": outcome.event.rung,
        }


def _confined_in(order: Sequence[Step], program: bytes) -> dict[str, bool]:
    """Confine a forked child with the last steps in ``order``; which layers took."""
    read_end, write_end = os.pipe()
    workdir = tempfile.mkdtemp()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            config = SessionConfig(
                workdir=workdir,
                env=base_environment(workdir),
                memory_bytes=1 << 30,
                cpu_seconds=10.0,
                file_size_bytes=1 << 20,
                max_processes=16,
                max_open_files=64,
            )
            placement = Placement(uid=None, gid=None, read_only=runtime_read_only_paths())
            report = Confinement()
            confine(config, placement, program, report, own_mount_namespace=False, order=order)
            layers = {name: entry["active"] is True for name, entry in report.layers.items()}
            os.write(write_end, json.dumps(layers).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    data = b""
    while chunk := os.read(read_end, 65536):
        data += chunk
    os.close(read_end)
    os.waitpid(pid, 0)
    shutil.rmtree(workdir)
    layers: dict[str, bool] = json.loads(data)
    return layers


def main() -> None:
    program = seccomp.compile_filter()
    backend = NativeBackend()
    with (
        tempfile.TemporaryDirectory() as blobs,
        backend.open(SessionSpec(blobs=BlobStore(Path(blobs)))) as session,
    ):
        rung = session.rung.value if session.rung is not None else None
        missing = sorted(
            layer.value for layer, status in session.layers.items() if not status.active
        )
    refused = None
    try:
        with tempfile.TemporaryDirectory() as blobs:
            backend.open(SessionSpec(blobs=BlobStore(Path(blobs)), rung="full")).close()
    except BackendUnavailable as exc:
        refused = str(exc)
    backend.close()
    report = {
        "uid": os.getuid(),
        "rung": rung,
        "missing": missing,
        "refused_full": refused,
        "native": _run("native"),
        "restricted": _run("restricted"),
        "order": {
            "production": _confined_in(ORDER, program),
            **{name: _confined_in(order, program) for name, order in REGRESSED.items()},
        },
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
