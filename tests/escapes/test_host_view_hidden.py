"""What Landlock does not mediate: ``stat`` of host paths, the host's pids in /proc, and the
host's directory names in ``Path.cwd()`` and tracebacks.

Landlock refuses opens, but any path can still be ``stat``ed (sizes of /etc/shadow, other
sessions' file names, a host process per /proc entry), and the workdir's real path shows in
everything the session prints. A private root holds nothing of the host, and puts the workdir
at a neutral path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from safeexec.model import ExecStatus

if TYPE_CHECKING:
    from conftest import Sandbox


def test_host_files_cannot_even_be_statted(sandbox: Sandbox) -> None:
    outside = sandbox.canaries.secret_file
    code = f"""
import os
for path in ({str(outside)!r}, {str(outside.parent)!r}, "/etc/shadow", "/etc/passwd", "/tmp"):
    try:
        os.stat(path)
        print("seen", path)
    except OSError as exc:
        print("hidden", path, exc.errno)
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK, ran.text
    assert "seen" not in ran.stdout, ran.stdout
    sandbox.assert_usable()


def test_host_processes_are_not_in_the_sessions_proc(sandbox: Sandbox) -> None:
    victim = sandbox.canaries.victim.pid
    code = f"""
import os
print("victim", os.path.exists("/proc/{victim}"))
print("host pids", sum(os.path.exists(f"/proc/{{n}}") for n in range(1, 4096)))
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK, ran.text
    assert "victim False" in ran.stdout, ran.stdout
    visible = int(ran.stdout.split("host pids")[1].split()[0])
    assert visible <= 2, ran.stdout  # the worker, and this cell if it forked nothing else
    sandbox.assert_usable()


def test_the_workdirs_host_path_shows_nowhere(sandbox: Sandbox) -> None:
    host_path = str(sandbox.session.workdir.resolve())
    sandbox.session.upload("helper.py", b"def fail():\n    raise ValueError('from helper')\n")
    code = """
import os, pathlib, sys, tempfile
print(pathlib.Path.cwd(), os.getcwd(), os.environ.get("HOME"), tempfile.gettempdir())
print(os.path.abspath("helper.py"), os.path.realpath("."))
sys.path.insert(0, ".")
import helper
helper.fail()
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.ERROR, ran.text
    assert "from helper" in ran.text
    assert host_path not in ran.text, ran.text
    assert sandbox.session.workdir.parent.name not in ran.text, ran.text
    sandbox.assert_usable()
