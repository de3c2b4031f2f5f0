"""Every file effect of every view goes through the one mediator (``WorkdirOps`` in the core's
``workdir_files``): no view opens, stats, lists, moves or removes a file itself.

Two checks: a scan of the views' source for the file-system calls of the stdlib, and an audit
hook that records every file event while cells exercise the file views, in a fresh interpreter,
and names any event no mediator frame is behind.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import safeexec.restricted.views as views_package

_VIEWS = sorted(Path(views_package.__file__).parent.glob("*.py"))


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STAT_PATH = _names(
    "exists lexists isfile isdir islink ismount getsize getmtime getatime getctime realpath "
    "samefile"
)
# Module → the names in it that touch the file system (``None``: every name does).
_FILE_CALLS: dict[str, frozenset[str] | None] = {
    "builtins": _names("open"),
    "io": _names("open open_code FileIO"),
    "os": _names(
        "open fdopen stat lstat statvfs access remove unlink rmdir removedirs mkdir makedirs "
        "rename renames replace listdir scandir walk fwalk chmod chown lchown utime link "
        "symlink readlink truncate chdir mkfifo mknod"
    ),
    "os.path": _STAT_PATH,
    "posixpath": _STAT_PATH,
    "pathlib": _names("Path PosixPath"),
    "shutil": None,
    "tempfile": None,
    "glob": None,
}


def _offences(source: str) -> list[str]:
    """The file-system calls ``source`` makes itself (each as ``line: what``)."""
    tree = ast.parse(source)
    aliases: dict[str, str] = {}  # local name → module
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in _FILE_CALLS or alias.name == "os":
                    aliases[alias.asname or alias.name.split(".")[0]] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module in _FILE_CALLS:
            names = _FILE_CALLS[node.module]
            for alias in node.names:
                if alias.name == "path" and node.module == "os":
                    aliases[alias.asname or "path"] = "os.path"
                elif names is None or alias.name in names:
                    found.append(f"{node.lineno}: from {node.module} import {alias.name}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "open"
        ):
            found.append(f"{node.lineno}: open(...)")
        if not isinstance(node, ast.Attribute):
            continue
        module = _module_of(node.value, aliases)
        if module is None or module not in _FILE_CALLS:
            continue
        names = _FILE_CALLS[module]
        if names is None or node.attr in names:
            found.append(f"{node.lineno}: {module}.{node.attr}")
    return found


def _module_of(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """The module ``node`` names (``os``, ``os.path``…), if it names one."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if isinstance(node, ast.Attribute):
        parent = _module_of(node.value, aliases)
        return None if parent is None else f"{parent}.{node.attr}"
    return None


@pytest.mark.parametrize("path", _VIEWS, ids=[p.stem for p in _VIEWS])
def test_no_view_touches_a_file_itself(path: Path) -> None:
    assert _offences(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    ("snippet", "offence"),
    [
        ("import os\nos.stat(p)", "2: os.stat"),
        ("import os\nos.path.exists(p)", "2: os.path.exists"),
        ("import os.path as q\nq.getsize(p)", "2: os.path.getsize"),
        ("from os import remove", "1: from os import remove"),
        ("import shutil\nshutil.disk_usage(p)", "2: shutil.disk_usage"),
        ("import pathlib\npathlib.Path(p).unlink()", "2: pathlib.Path"),
        ("open(p)", "1: open(...)"),
        ("import io\nio.FileIO(p)", "2: io.FileIO"),
    ],
)
def test_the_scan_finds_each_kind_of_file_call(snippet: str, offence: str) -> None:
    assert _offences(snippet) == [offence]


def test_the_scan_lets_the_mediator_and_pure_path_text_through() -> None:
    source = "import os, posixpath\nops.stat(p)\nos.fspath(p)\nposixpath.join(a, b)\nself.open(p)"
    assert _offences(source) == []


# -- at run time --------------------------------------------------------------------------------
_EXERCISE = """
import os, pathlib, shutil, glob, tempfile, sqlite3, gzip, zipfile, tarfile, logging
os.makedirs('d/e', exist_ok=True)
pathlib.Path('d/a.txt').write_text('x')
assert pathlib.Path('d/a.txt').read_text() == 'x'
with open(pathlib.Path('d/b.txt'), 'w') as f:
    f.write('y')
os.listdir('d'); list(os.walk('d')); glob.glob('d/*.txt'); os.stat('d/a.txt')
os.path.exists('d/a.txt'); os.path.getsize('d/a.txt'); shutil.disk_usage('.')
shutil.copy('d/a.txt', 'd/c.txt'); shutil.move('d/c.txt', 'd/e/c.txt')
os.rename('d/b.txt', 'd/f.txt')
with tempfile.TemporaryDirectory() as t:
    pathlib.Path(t, 'x').write_text('z')
c = sqlite3.connect('d/db.sqlite'); c.execute('create table t(a)'); c.commit(); c.close()
with gzip.open('d/a.gz', 'wb') as g:
    g.write(b'abc')
assert gzip.open('d/a.gz').read() == b'abc'
with zipfile.ZipFile('d/a.zip', 'w') as z:
    z.write('d/a.txt')
zipfile.ZipFile('d/a.zip').extractall('d/unzipped')
with tarfile.open('d/a.tar', 'w') as t:
    t.add('d/a.txt')
log = logging.getLogger('x'); log.addHandler(logging.FileHandler('d/log.txt')); log.warning('w')
os.remove('d/f.txt'); shutil.rmtree('d')
"""

_PROBE = """
import json, os, sys, tempfile
from pathlib import Path

_EVENTS = ("open", "os.", "shutil.", "sqlite3.connect", "tempfile.", "glob.")
_MEDIATORS = ("safeexec/restricted/workdir_files.py", "safeexec/capabilities/targets.py")
IN_MEMORY = ":memory:"
armed = False
unmediated = []

def hook(event, args):
    if not armed or not event.startswith(_EVENTS):
        return
    if event.startswith("sqlite3.connect") and (event != "sqlite3.connect" or args[0] == IN_MEMORY):
        return  # a database in memory: the view moves its bytes through the mediator
    frame = sys._getframe(1)
    views = None
    while frame is not None:
        name = frame.f_code.co_filename
        if name.endswith(_MEDIATORS) or name.startswith("<frozen importlib"):
            return  # the mediator's own effect, or the interpreter importing a module
        if views is None and "safeexec/restricted/views/" in name:
            views = f"{name.rsplit('/', 1)[-1]}:{frame.f_lineno}"
        frame = frame.f_back
    if views is not None:  # a view's own effect (the interpreter's own imports are not)
        unmediated.append(f"{event} from {views}")

from safeexec.restricted import RestrictedExecutor
from safeexec.restricted.views import WorkerViews

work = Path(tempfile.mkdtemp())
imports = tuple(sys.argv[2].split(","))
if sys.argv[3] == "sabotage":
    from safeexec.restricted.views import workdir_views

    real_text = workdir_views._text

    def _text(value):
        os.listdir("/")
        return real_text(value)

    workdir_views._text = _text
executor = RestrictedExecutor(imports=imports, workdir=work, views=WorkerViews)
executor.execute(f"import {', '.join(imports)}", filename="<warm>")
sys.addaudithook(hook)
armed = True
executor.execute(sys.argv[1], filename="<cell>")
armed = False
print(json.dumps(unmediated))
"""


def _unmediated(cell: str, *, sabotage: bool = False) -> list[str]:
    """The file events of ``cell`` that no mediator frame is behind; ``sabotage`` makes the
    ``os`` view's path check list the root directory itself first (what the probe must see)."""
    imports = "os,os.path,pathlib,shutil,glob,tempfile,sqlite3,gzip,zipfile,tarfile,logging"
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, cell, imports, "sabotage" if sabotage else ""],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_every_file_event_of_the_views_comes_through_the_mediator() -> None:
    assert _unmediated(_EXERCISE) == []


def test_the_probe_names_a_view_that_touches_a_file_itself() -> None:
    found = _unmediated("import os\nos.path.exists('x')\n", sabotage=True)
    assert any(event.startswith("os.listdir from workdir_views.py:") for event in found), found
