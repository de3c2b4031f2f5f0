"""Run under :mod:`launcher` (``container-root-cgroup2``) by ``test_rungs.py``: open a native
session in a container whose only writable cgroup is its own (v2), leave a daemon behind, close
it; print one JSON object with where the host, the worker and the daemon were, the cgroup layers
and what was left after the close.

Not a test module (no ``test_`` prefix): it runs in a simulated environment, not in pytest.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import ExecRequest, SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.model.values import Limits
from safeexec.sandbox import cgroups
from safeexec.sandbox.cgroup_v2 import own_group

# A grandchild that leaves the session's process tree (setsid, its parent gone) and ignores
# SIGTERM: only its group still holds it.
DAEMON = """
import os, signal, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(300)
    os._exit(0)
time.sleep(0.2)
print("left a daemon")
"""


def _group_of(pid: int) -> str | None:
    try:
        return own_group(Path(f"/proc/{pid}/cgroup").read_text())
    except OSError:
        return None


def _session_processes_of(group: str) -> list[int]:
    directory = os.path.join("/sys/fs/cgroup", group.lstrip("/"))
    return [int(p) for p in Path(directory, "cgroup.procs").read_text().split()]


def main() -> None:
    host_before = _group_of(os.getpid())
    backend = NativeBackend()
    with tempfile.TemporaryDirectory() as state:
        blobs = BlobStore(Path(state) / "blobs")
        with backend.open(SessionSpec(limits=Limits(), blobs=blobs)) as session:
            layers = {
                layer.value: {"active": status.active, "detail": status.detail}
                for layer, status in session.layers.items()
                if layer.value.startswith("cgroup_")
            }
            result = session.run(ExecRequest(action_id="probe", code=DAEMON))
            worker_group = _group_of(session.pid or 0)
            held = _session_processes_of(worker_group or "/")
        time.sleep(0.2)
    backend.close()
    subtree = cgroups._subtree()
    print(
        json.dumps(
            {
                "host_before": host_before,
                "host_after": _group_of(os.getpid()),
                "subtree": subtree.directory,
                "moved": list(subtree.moved),
                "layers": layers,
                "status": result.status.value,
                "worker_group": worker_group,
                "held": held,
                "alive_after_close": [pid for pid in held if _group_of(pid) is not None],
                "groups_after_close": sorted(
                    entry.name for entry in os.scandir("/sys/fs/cgroup") if entry.is_dir()
                ),
            }
        )
    )


if __name__ == "__main__":
    main()
