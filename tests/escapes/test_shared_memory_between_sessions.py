"""Two sessions try to meet through shared memory: System V segments, /dev/shm, message queues.

Sessions of one backend are siblings forked from one template. A key-addressed System V
segment or a named POSIX object would be a channel between them (and to the host) that no file
rule sees; each session has its own IPC namespace and no /dev/shm, or, on a rung without the
namespace, no IPC calls at all (ENOSYS).
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import TYPE_CHECKING

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.model.values import ExecRequest, ExecStatus, Limits

if TYPE_CHECKING:
    from escape_support import Sandbox

KEY = 0x5AFE0001
HOST_KEY = 0x5AFE0002
SYSV = f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
def segment(flags):
    shmid = libc.shmget({KEY}, 4096, flags)
    return shmid, ctypes.get_errno()
"""
CREATE = (
    SYSV
    + """
shmid, err = segment(0o1666)  # IPC_CREAT | 0666
if shmid >= 0:
    address = libc.shmat(shmid, None, 0)
    ctypes.memmove(address, b'from session A', 14)
try:
    open('/dev/shm/safeexec-meet', 'w').write('A')
    print(shmid >= 0, err, 'dev-shm-open')
except OSError as exc:
    print(shmid >= 0, err, type(exc).__name__)
"""
)
FIND = (
    SYSV
    + """
shmid, err = segment(0)
try:
    print(shmid, err, open('/dev/shm/safeexec-meet').read())
except OSError as exc:
    print(shmid, err, type(exc).__name__)
"""
)


def test_sessions_cannot_meet_through_shared_memory(
    sandbox: Sandbox, backend: NativeBackend, tmp_path: Path
) -> None:
    ran = sandbox.run(CREATE)
    assert ran.result.status is ExecStatus.OK, ran.text
    # A segment of its own (or, without a memory cgroup to charge it, shmget refused: ENOSYS);
    # no /dev/shm: absent from a private root, else refused by Landlock.
    created, err, shm = ran.stdout.split()
    assert created == "True" or (created, err) == ("False", "38"), ran.stdout
    assert shm in ("FileNotFoundError", "PermissionError"), ran.stdout
    workdir = tmp_path / "other"
    workdir.mkdir()
    blobs = BlobStore(tmp_path / "blobs-other")
    other = backend.open(SessionSpec(workdir=workdir, limits=Limits(), blobs=blobs))
    try:
        result = other.run(ExecRequest(action_id="find", code=FIND, limits=Limits()))
        assert result.status is ExecStatus.OK, result.message
        shmid, err, dev_shm = blobs.get(result.stdout).decode().split()
        # ENOENT: the other session's segment is not here (ENOSYS: System V refused outright)
        assert (shmid, err) in (("-1", "2"), ("-1", "38"))
        assert dev_shm in ("PermissionError", "FileNotFoundError")  # A could not create it
    finally:
        other.close()
    sandbox.assert_usable()


def test_a_session_cannot_reach_the_hosts_ipc_objects(sandbox: Sandbox) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    shmid = libc.shmget(HOST_KEY, 4096, 0o1666)  # IPC_CREAT | 0666: open to every uid
    assert shmid >= 0, os.strerror(ctypes.get_errno())
    try:
        ran = sandbox.run(
            SYSV
            + f"""
by_key, key_err = segment(0)
address = libc.shmat({shmid}, None, 0)
print(by_key, key_err, address is not None and address != ctypes.c_void_p(-1).value,
      ctypes.get_errno())
"""
        )
    finally:
        libc.shmctl(shmid, 0, None)  # IPC_RMID
    assert ran.result.status is ExecStatus.OK, ran.text
    by_key, key_err, attached, attach_err = ran.stdout.split()
    # Not there (ENOENT, EINVAL: another namespace), not permitted, or refused whole (ENOSYS).
    assert attached == "False", ran.stdout
    assert (by_key, key_err) in (("-1", "2"), ("-1", "38"), ("-1", "13")), ran.stdout
    assert attach_err in ("22", "38", "13"), ran.stdout
    sandbox.assert_usable()
