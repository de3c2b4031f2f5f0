"""The warm pool: session processes confine themselves before any claim and see no workdir."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.model.values import ExecRequest, ExecStatus, Limits
from safeexec.sandbox import rootfs

_WAIT_SECONDS = 30.0


def _status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as fh:
        return dict(line.rstrip("\n").split(":\t", 1) for line in fh if ":\t" in line)


def _members(template_pid: int, session_pid: int) -> list[int]:
    """Pool members: the template's children that serve no session, once they are confined."""
    found = []
    for task in os.listdir(f"/proc/{template_pid}/task"):
        with open(f"/proc/{template_pid}/task/{task}/children") as fh:
            for pid in map(int, fh.read().split()):
                if pid != session_pid and _status(pid).get("Seccomp") == "2":
                    found.append(pid)
    return found


def test_pool_members_are_confined_before_any_claim_and_hold_no_workdir(tmp_path: Path) -> None:
    backend = NativeBackend(pool_size=2)
    try:
        with backend.open(SessionSpec(limits=Limits(), blobs=BlobStore(tmp_path / "b"))) as one:
            ran = one.run(ExecRequest(action_id="a", code="open('secret.txt', 'w').write('x')"))
            assert ran.status is ExecStatus.OK
            template_pid = backend.statistics().template_pid
            assert template_pid is not None and one.pid is not None
            deadline = time.monotonic() + _WAIT_SECONDS
            while not (members := _members(template_pid, one.pid)):
                assert time.monotonic() < deadline, "no pool member confined itself"
                time.sleep(0.05)
            for pid in members:
                status = _status(pid)
                assert status["NoNewPrivs"] == "1"
                assert int(status["CapEff"], 16) == 0
                assert int(status["CapBnd"], 16) == 0
                if os.geteuid() == 0:
                    assert all(int(uid) != 0 for uid in status["Uid"].split())
                # Its view: the private root, whose workdir mount point is still empty.
                assert os.listdir(f"/proc/{pid}/root{rootfs.SANDBOX_WORKDIR}") == []
                assert "secret.txt" not in os.listdir(f"/proc/{pid}/root{rootfs.WORKDIR_PARENT}")
    finally:
        backend.close()


def test_a_claimed_session_sees_only_its_own_workdir_and_not_its_parent(tmp_path: Path) -> None:
    backend = NativeBackend(pool_size=2)
    code = (
        "import os\nopen('mine.txt', 'w').write('x')\nprint(sorted(os.listdir('.')))\n"
        "try:\n    os.listdir('/home')\nexcept PermissionError:\n    print('parent closed')\n"
    )
    try:
        blobs = BlobStore(tmp_path / "b")
        with (
            backend.open(SessionSpec(limits=Limits(), blobs=blobs)) as first,
            backend.open(SessionSpec(limits=Limits(), blobs=blobs)) as second,
        ):
            for session in (first, second):
                ran = session.run(ExecRequest(action_id="a", code=code))
                assert ran.status is ExecStatus.OK
                assert blobs.get(ran.stdout).decode().split("\n")[:2] == [
                    "['.tmp', 'mine.txt']",
                    "parent closed",
                ]
            layers = first.layers
            assert all(
                status.active
                for status in layers.values()
                if status.layer.value
                in {
                    "landlock",
                    "seccomp",
                    "mountns",
                    "privdrop",
                    "no_new_privs",
                    "workdir",
                    "rlimits",
                }
            )
    finally:
        backend.close()


@pytest.mark.parametrize(
    ("paths", "empty"),
    [
        (("/usr", "/lib", "/dev/null"), True),
        (("/usr", "/home/me/.venv"), False),
        (("/home",), False),
        (("/",), False),
        (("/homework",), True),
    ],
)
def test_the_workdirs_parent_may_hold_nothing_but_the_workdir(
    paths: tuple[str, ...], empty: bool
) -> None:
    assert rootfs.workdir_parent_is_empty(paths) is empty


def test_a_claimed_session_holds_no_descriptor_but_its_streams_and_channel(
    tmp_path: Path,
) -> None:
    # A pool member keeps descriptors of its own until the claim (its pool socket, the session's
    # Landlock ruleset built ahead); none may reach the session's code.
    backend = NativeBackend(pool_size=2)
    code = (
        "import os\nopen_fds = []\nfor fd in range(4096):\n    try:\n        os.fstat(fd)\n"
        "        open_fds.append(fd)\n    except OSError:\n        pass\nprint(open_fds)\n"
    )
    try:
        blobs = BlobStore(tmp_path / "b")
        for _ in range(3):
            with backend.open(SessionSpec(limits=Limits(), blobs=blobs)) as session:
                ran = session.run(ExecRequest(action_id="a", code=code))
                assert ran.status is ExecStatus.OK
                assert blobs.get(ran.stdout).decode().strip() == "[0, 1, 2, 3]"
    finally:
        backend.close()


_ROOT_PROBE = """
import ctypes, json
writes = {}
for path in ("/planted", "/usr/planted", "/dev/planted"):
    try:
        open(path, "w").close()
        writes[path] = "written"
    except OSError as exc:
        writes[path] = exc.errno
libc = ctypes.CDLL(None, use_errno=True)
# MS_REMOUNT | MS_BIND: make the root writable again, as it was while the template built it.
remount = libc.mount(None, b"/", None, ctypes.c_ulong(32 | 4096), None)
print(json.dumps({"writes": writes, "remount": remount}))
"""


def _mounts(pid: int) -> list[list[str]]:
    with open(f"/proc/{pid}/mountinfo") as fh:
        return [line.split() for line in fh]


def test_the_root_pool_members_share_is_read_only_private_and_gets_a_proc_each(
    tmp_path: Path,
) -> None:
    # The template assembles the minimal root once; each member enters a copy of it in a mount
    # namespace of its own and mounts its own /proc there. Nothing of it may be writable, carry
    # mounts between sessions, or be remounted from inside.
    backend = NativeBackend(pool_size=2)
    try:
        blobs = BlobStore(tmp_path / "b")
        with (
            backend.open(SessionSpec(limits=Limits(), blobs=blobs)) as first,
            backend.open(SessionSpec(limits=Limits(), blobs=blobs)) as second,
        ):
            procs = set()
            for session in (first, second):
                assert session.layers["mountns"].active and session.pid is not None
                ran = session.run(ExecRequest(action_id="a", code=_ROOT_PROBE))
                assert ran.status is ExecStatus.OK, blobs.get(ran.stderr)
                probe = json.loads(blobs.get(ran.stdout))
                assert "written" not in probe["writes"].values(), probe
                assert probe["remount"] == -1
                # As the session sees its mounts (its root is "/" of its chroot): the root
                # read-only, no mount in a peer group or receiving from a master.
                mounts = _mounts(session.pid)
                root = [m for m in mounts if m[4] == "/"]
                assert root and "ro" in root[-1][5].split(","), root
                assert all(m[6] == "-" for m in mounts), [m for m in mounts if m[6] != "-"]
                procs.add(os.stat(f"/proc/{session.pid}/root/proc").st_dev)
                assert _status(session.pid)["NSpid"].split()[-1] == "1"
            assert len(procs) == 2  # a /proc each, of its own pid namespace
    finally:
        backend.close()
