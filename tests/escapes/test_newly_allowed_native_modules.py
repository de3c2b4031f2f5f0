"""The modules the default pack now lets native code import stay inside the kernel layers.

Issue 11 loosened the gate for native mode (os, sys, shutil, glob, tempfile, threads, asyncio,
sqlite3, archives); the kernel layers must hold for whatever the gate lets through. Each test
uses one of those modules the way an attack would, against the canaries (a secret in the host
environment, a world-readable file outside the workdir, loopback listeners) and expects the
attempt to fail while the session stays usable. Restricted mode refuses the imports themselves.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def _outcomes(sandbox: Sandbox, code: str) -> dict[str, str]:
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK, ran.text
    return dict(json.loads(ran.stdout.strip().splitlines()[-1]))


def _attempt(name: str, body: str) -> str:
    # Each attempt records "ok:<what it got>" or the exception type that stopped it.
    return (
        f"try:\n    {body}\n    out[{name!r}] = 'ok:' + str(got)[:200]\n"
        f"except Exception as exc:\n    out[{name!r}] = type(exc).__name__\n"
    )


def test_os_and_shutil_cannot_leave_the_workdir(sandbox: Sandbox) -> None:
    secret = str(sandbox.canaries.secret_file)
    code = (
        "import json, os, shutil, glob\nout = {}\n"
        + "".join(
            (
                _attempt("os.open", f"got = os.read(os.open({secret!r}, os.O_RDONLY), 100)"),
                _attempt("chdir-then-open", f"os.chdir('/'); got = open({secret!r}).read()"),
                _attempt("shutil.copy", f"got = shutil.copy({secret!r}, 'stolen.txt')"),
                _attempt("write-outside", f"got = open({secret!r}, 'w').write('x')"),
                _attempt("makedirs-outside", "got = os.makedirs('/tmp/safeexec-escape-dir')"),
                _attempt(
                    "symlink-read", f"os.symlink({secret!r}, 'link'); got = open('link').read()"
                ),
                _attempt("listdir-home", "got = os.listdir('/root') + os.listdir('/home')"),
                _attempt("glob-etc", "got = glob.glob('/etc/ssh/*key*')"),
            )
        )
        + "print(json.dumps(out))\n"
    )
    outcomes = _outcomes(sandbox, code)
    for name in ("os.open", "chdir-then-open", "shutil.copy", "write-outside", "symlink-read"):
        assert not outcomes[name].startswith("ok:"), (name, outcomes[name])
    assert not outcomes["makedirs-outside"].startswith("ok:"), outcomes
    glob_got = outcomes["glob-etc"]
    assert glob_got in ("ok:[]", "PermissionError"), glob_got
    sandbox.assert_usable()


def test_os_environ_holds_no_host_secret(sandbox: Sandbox) -> None:
    ran = sandbox.run("import os, json\nprint(json.dumps(dict(os.environ)))\n")
    assert ran.result.status is ExecStatus.OK, ran.text
    assert "SAFEEXEC_CANARY_SECRET" not in json.loads(ran.stdout)
    sandbox.assert_usable()


def test_sqlite3_tempfile_and_archives_cannot_write_outside(sandbox: Sandbox) -> None:
    outside = str(sandbox.canaries.secret_file.parent)
    code = (
        "import json, io, os, sqlite3, tarfile, tempfile, zipfile\nout = {}\n"
        + "".join(
            (
                _attempt(
                    "sqlite-outside",
                    f"c = sqlite3.connect({outside + '/evil.db'!r}); "
                    "c.execute('create table t(x)'); got = c.commit()",
                ),
                _attempt(
                    "sqlite-attach",
                    "c = sqlite3.connect(':memory:'); "
                    f"c.execute(\"attach '{outside}/x.db' as x\"); "
                    "got = c.execute('create table x.t(a)')",
                ),
                _attempt("tempfile-dir", f"got = tempfile.mkstemp(dir={outside!r})"),
                _attempt(
                    "tar-climb",
                    "b = io.BytesIO(); t = tarfile.open(fileobj=b, mode='w'); "
                    "i = tarfile.TarInfo('../../../../tmp/safeexec-tar-escape'); i.size = 1; "
                    "t.addfile(i, io.BytesIO(b'x')); t.close(); b.seek(0); "
                    "tarfile.open(fileobj=b).extractall('.'); "
                    "got = os.path.exists('/tmp/safeexec-tar-escape')",
                ),
            )
        )
        + "print(json.dumps(out))\n"
    )
    outcomes = _outcomes(sandbox, code)
    for name in ("sqlite-outside", "sqlite-attach", "tempfile-dir"):
        assert not outcomes[name].startswith("ok:"), (name, outcomes[name])
    assert outcomes["tar-climb"] in ("ok:False", "PermissionError", "OSError"), outcomes
    assert not (sandbox.canaries.secret_file.parent / "evil.db").exists()
    assert not (sandbox.canaries.secret_file.parent / "x.db").exists()
    sandbox.assert_usable()


def test_threads_and_asyncio_reach_no_network(sandbox: Sandbox) -> None:
    port = sandbox.canaries.tcp.port
    code = f"""
import asyncio, json, threading
out = {{}}

async def connect():
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", {port}), 2)
        writer.close()
        return "connected"
    except Exception as exc:
        return type(exc).__name__

out["asyncio"] = asyncio.run(connect())

def in_thread():
    out["thread"] = asyncio.run(connect())

t = threading.Thread(target=in_thread)
t.start()
t.join(5)
print(json.dumps(out))
"""
    outcomes = _outcomes(sandbox, code)
    assert outcomes["asyncio"] != "connected" and outcomes.get("thread") != "connected", outcomes
    sandbox.assert_usable()
