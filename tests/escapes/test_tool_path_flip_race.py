"""A thread in the sandbox flips a tool's path between a file and a link to a host file (item 3).

The gateway used to resolve a ``Path`` argument with ``realpath``, check it lay beneath the root
and hand the tool the pathname, which the tool opened again: a second thread flipping ``t/f``
between a regular file and a symlink to a host file won that race within a few hundred calls.
Now Landlock withholds making symlinks in the workdir, and even where a link exists the tool
opens only through the descriptor of the directory it checked, never following a link. The
restricted modes cannot make links or threads at all; the attack runs there too and is refused.
"""

from __future__ import annotations

import threading
from pathlib import Path

from escape_support import Canaries
from tool_support import tool_backend

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.capabilities.gateway import CapabilitySet, tool
from safeexec.model.values import ExecRequest, Limits

CALLS = 3000
FLIPS = 200_000  # the flipping thread stops by itself


def _attack(secret: Path, component: str) -> str:
    # component "leaf": t/f itself flips; "dir": t flips between a directory and a link.
    return f"""
import os, threading
os.makedirs("t", exist_ok=True)
with open("t/f", "w") as handle:
    handle.write("plain")
links = []
try:
    os.symlink({str(secret)!r} if {component!r} == "leaf" else {str(secret.parent)!r}, "link")
    links.append("made")
except OSError as exc:
    print("no link:", type(exc).__name__)
done = threading.Event()
def flip():
    for _ in range({FLIPS}):
        if done.is_set() or not links:
            return
        try:
            # Each state change is one atomic rename; the next one is prepared under another name.
            if {component!r} == "leaf":
                os.symlink({str(secret)!r}, "t/l"); os.replace("t/l", "t/f")
                with open("t/p", "w") as handle:
                    handle.write("plain")
                os.replace("t/p", "t/f")
            else:
                os.rename("t", "t.real"); os.symlink({str(secret.parent)!r}, "t")
                os.unlink("t"); os.rename("t.real", "t")
        except OSError:
            pass
flipper = threading.Thread(target=flip)
flipper.start()
leaked = 0
for _ in range({CALLS}):
    try:
        if read("t/" + ({secret.name!r} if {component!r} == "dir" else "f")) != "plain":
            leaked += 1
    except Exception:
        pass
done.set()
flipper.join()
print("leaked", leaked)
"""


def _race(backend: NativeBackend, canaries: Canaries, tmp_path: Path, component: str) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "t").mkdir()
    (workdir / "t" / "f").write_text("plain")
    (workdir / "t" / canaries.secret_file.name).write_text("plain")
    returned: list[str] = []

    @tool(root=workdir, effects=["read"])
    def read(path: Path) -> str:
        text = path.read_text()
        returned.append(text)
        return text

    caps = CapabilitySet()
    caps.grant(read)
    blobs = BlobStore(tmp_path / "blobs")
    session = tool_backend(backend).open(
        SessionSpec(workdir=workdir, limits=Limits(), blobs=blobs, tools=caps)
    )
    try:
        code = _attack(canaries.secret_file, component)
        result = session.run(ExecRequest(action_id="race", code=code, limits=Limits()))
        output = blobs.get(result.stdout).decode() + blobs.get(result.stderr).decode()
    finally:
        session.close()
    assert not canaries.leaked(output), output[:2000]
    if backend.name == "native":  # Landlock: no symlink can be made in the workdir
        assert "no link: PermissionError" in output, output[:2000]
    assert all(canaries.secret not in text for text in returned)
    assert threading.active_count() < 50  # nothing of the attack lingers in the host
    canaries.assert_intact()


def test_a_leaf_flipped_to_a_host_link_is_never_read(
    backend: NativeBackend, canaries: Canaries, tmp_path: Path
) -> None:
    _race(backend, canaries, tmp_path, "leaf")


def test_a_directory_flipped_to_a_host_link_is_never_walked(
    backend: NativeBackend, canaries: Canaries, tmp_path: Path
) -> None:
    _race(backend, canaries, tmp_path, "dir")
