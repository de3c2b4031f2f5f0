"""What Landlock does not mediate: ``stat`` of host paths, the host's pids in /proc, and the
host's directory names in ``Path.cwd()`` and tracebacks.

Landlock refuses opens, but any path can still be ``stat``ed (sizes of /etc/shadow, other
sessions' file names, a host process per /proc entry), and the workdir's real path shows in
everything the session prints. A private root holds nothing of the host, and puts the workdir
at a neutral path.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import safeexec
from safeexec.model.values import ExecStatus
from safeexec.sandbox.layers import Layer

if TYPE_CHECKING:
    from escape_support import Sandbox


def _runtime_entries_under_tmp() -> set[str]:
    """Names directly in /tmp that lead to the interpreter or the package (a checkout or venv
    under /tmp): the private root must hold those ancestors of its read-only runtime paths."""
    runtime = (sys.prefix, sys.base_prefix, str(Path(safeexec.__file__).resolve().parents[1]))
    return {Path(p).parts[2] for p in runtime if p.startswith("/tmp/")}


def test_host_files_cannot_even_be_statted(sandbox: Sandbox) -> None:
    if not sandbox.restricted:  # the restricted guards refuse it on every rung
        sandbox.needs(Layer.MOUNTNS)  # without it Landlock refuses opening, not stat
    outside = sandbox.canaries.secret_file
    runtime_in_tmp = _runtime_entries_under_tmp()
    # /tmp itself exists inside only as an ancestor of runtime paths; then only those show in it.
    paths = [str(outside), str(outside.parent), "/etc/shadow", "/etc/passwd"]
    if not runtime_in_tmp:
        paths.append("/tmp")
    code = f"""
import json, os
for path in {paths!r}:
    try:
        os.stat(path)
        print("seen", path)
    except OSError as exc:
        print("hidden", path, exc.errno)
try:
    names = sorted(os.listdir("/tmp"))
except OSError:  # absent, or not even listable
    names = []
print(json.dumps(names))
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK, ran.text
    lines = ran.stdout.splitlines()
    assert len(lines) == len(paths) + 1, ran.stdout
    assert not any(line.startswith("seen") for line in lines[:-1]), ran.stdout
    assert set(json.loads(lines[-1])) <= runtime_in_tmp, ran.stdout
    sandbox.assert_usable()


def test_host_processes_are_not_in_the_sessions_proc(sandbox: Sandbox) -> None:
    if not sandbox.restricted:  # the restricted guards refuse it on every rung
        sandbox.needs(Layer.PROC)
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
    if not sandbox.restricted:  # the restricted guards refuse it on every rung
        sandbox.needs(Layer.MOUNTNS)
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
