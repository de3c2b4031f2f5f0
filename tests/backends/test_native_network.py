"""A native session with [network] on: ordinary clients reach allowed hosts through the host
proxy (test names resolve to loopback servers), every connection is an event of the call, and
every other way out stays shut."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend, NativeSession
from safeexec.egress import NetworkPolicy
from safeexec.model.values import (
    ExecRequest,
    ExecResult,
    ExecStatus,
    Limits,
    NetworkConnection,
    NetworkVerdict,
)
from tests.egress.loopback import (
    CertificateAuthority,
    build_wheel,
    http_upstream,
    mapping_resolver,
    simple_index,
)

NAMES = {"api.test": "127.0.0.1", "tls.test": "127.0.0.1", "other.test": "127.0.0.1"}


class Box:
    def __init__(self, session: NativeSession, blobs: BlobStore) -> None:
        self.session, self.blobs = session, blobs

    def run(self, code: str, **limits: float) -> tuple[ExecResult, str]:
        request = ExecRequest(action_id="a", code=code, limits=Limits(**limits))  # type: ignore[arg-type]
        result = self.session.run(request)
        text = (self.blobs.get(result.stdout) + self.blobs.get(result.stderr)).decode()
        return result, text + result.message


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int, Path]]:
    where = tmp_path_factory.mktemp("ca")
    ca = CertificateAuthority(where, ("tls.test",))
    with http_upstream() as plain, http_upstream(tls=ca.server_context()) as tls:
        yield plain, tls, ca.ca_file


@pytest.fixture(scope="module")
def box(
    upstreams: tuple[int, int, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Box]:
    plain, tls, ca_file = upstreams
    backend = NativeBackend(pool_size=1, resolver=mapping_resolver(NAMES))
    blobs = BlobStore(tmp_path_factory.mktemp("blobs"))
    policy = NetworkPolicy(
        allow=(f"api.test:{plain}", f"tls.test:{tls}"),
        private_hosts=("api.test", "tls.test"),
        max_connections=20,
        idle_seconds=2.0,
    )
    session = backend.open(SessionSpec(limits=Limits(), blobs=blobs, network=policy))
    session.upload("ca.pem", ca_file.read_bytes())
    try:
        yield Box(session, blobs)
    finally:
        session.close()
        backend.close()


def _host_descriptors() -> list[str]:
    """What this process's descriptors refer to (those that close while being read skipped)."""
    held = []
    for name in os.listdir("/proc/self/fd"):
        try:
            held.append(os.readlink(f"/proc/self/fd/{name}"))
        except FileNotFoundError:
            continue
    return held


def _network(result: ExecResult) -> list[NetworkConnection]:
    return [e for e in result.events if isinstance(e, NetworkConnection)]


def test_urllib_reaches_an_allowed_host_and_the_call_records_it(
    box: Box, upstreams: tuple[int, int, Path]
) -> None:
    plain = upstreams[0]
    result, text = box.run(
        f"import urllib.request\nprint(urllib.request.urlopen('http://api.test:{plain}/x').read())"
    )
    assert result.status is ExecStatus.OK, text
    assert f"host=api.test:{plain} path=/x" in text
    [event] = _network(result)
    assert (event.host, event.port, event.verdict, event.address) == (
        "api.test",
        plain,
        NetworkVerdict.ALLOWED,
        "127.0.0.1",
    )
    assert event.bytes_received > 0


def test_a_stream_keeps_the_blocking_mode_its_socket_had(
    box: Box, upstreams: tuple[int, int, Path]
) -> None:
    # The host's stream takes the socket's place at connect: it keeps the socket's blocking mode.
    plain = upstreams[0]
    result, text = box.run(
        "import asyncio, os\n"
        "async def fetch():\n"
        "    reader, writer = await asyncio.open_connection('127.0.0.1', 3128)\n"
        "    sock = writer.get_extra_info('socket')\n"
        "    print('blocking', os.get_blocking(sock.fileno()))\n"
        f"    writer.write(b'GET http://api.test:{plain}/async HTTP/1.1\\r\\n'\n"
        f"                 b'Host: api.test:{plain}\\r\\n\\r\\n')\n"
        "    print((await reader.read()).splitlines()[-1])\n"
        "asyncio.run(fetch())\n"
        "import socket\n"
        "timed = socket.socket()\n"
        "timed.settimeout(5.0)\n"
        "timed.connect(('127.0.0.1', 3128))\n"
        "print('timed', os.get_blocking(timed.fileno()), timed.gettimeout())\n"
        "timed.close()"
    )
    assert result.status is ExecStatus.OK, text
    assert "blocking False" in text and f"host=api.test:{plain} path=/async" in text
    assert "timed False 5.0" in text
    assert NetworkVerdict.ALLOWED in [e.verdict for e in _network(result)]


def test_https_passes_through_to_an_allowed_host(
    box: Box, upstreams: tuple[int, int, Path]
) -> None:
    tls = upstreams[1]
    result, text = box.run(
        "import ssl, urllib.request\n"
        "ctx = ssl.create_default_context(cafile='ca.pem')\n"
        f"print(urllib.request.urlopen('https://tls.test:{tls}/s', context=ctx).read())"
    )
    assert result.status is ExecStatus.OK, text
    assert f"host=tls.test:{tls} path=/s" in text
    assert [e.method for e in _network(result)] == ["CONNECT"]


def test_a_host_outside_the_allowlist_is_refused_with_its_key(
    box: Box, upstreams: tuple[int, int, Path]
) -> None:
    plain = upstreams[0]
    result, text = box.run(
        f"import urllib.request\nurllib.request.urlopen('http://other.test:{plain}/')"
    )
    assert result.status is ExecStatus.ERROR and "403" in text
    [event] = _network(result)
    assert (event.verdict, event.rule, event.key) == (
        NetworkVerdict.REFUSED,
        "SX650",
        "network.allow",
    )


def test_a_child_interpreter_reaches_the_proxy_too(
    box: Box, upstreams: tuple[int, int, Path]
) -> None:
    plain = upstreams[0]
    child = (
        f"import urllib.request; print(urllib.request.urlopen('http://api.test:{plain}/c').read())"
    )
    result, text = box.run(
        f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {child!r}], check=True)"
    )
    assert result.status is ExecStatus.OK, text
    assert "path=/c" in text
    assert len(_network(result)) == 1


def test_every_other_way_out_stays_shut(box: Box) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    try:
        result, text = box.run(
            "import socket, _socket\n"
            "out = []\n"
            f"for target in [('127.0.0.1', {port}), ('::1', {port}), ('127.0.0.1', 3129)]:\n"
            "    try:\n"
            "        socket.create_connection(target, timeout=1); out.append('connected')\n"
            "    except OSError as exc:\n"
            "        out.append(type(exc).__name__)\n"
            "for family in (_socket.AF_INET, _socket.AF_INET6, _socket.AF_UNIX):\n"
            "    try:\n"
            "        _socket.socket(family, _socket.SOCK_STREAM); out.append('socket')\n"
            "    except OSError as exc:\n"
            "        out.append(type(exc).__name__)\n"
            "try:\n"
            "    socket.socket().bind(('127.0.0.1', 0)); out.append('bound')\n"
            "except OSError as exc:\n"
            "    out.append(type(exc).__name__)\n"
            "print(out)"
        )
        assert result.status is ExecStatus.OK, text
        assert "connected" not in text and "'socket'" not in text and "bound" not in text
        assert text.count("ConnectionRefusedError") == 3
        assert text.count("PermissionError") == 4
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()


def test_descriptors_a_sandbox_sends_over_its_channel_never_reach_the_host(box: Box) -> None:
    # The channel is the worker's to abuse: a pipe, a file and the channel itself go over it
    # (where seccomp lets sendmsg through: a rung whose workdir is a bounded mount).
    result, text = box.run(
        "import os, socket\n"
        "fd = int(os.environ['SAFEEXEC_EGRESS_FD'])\n"
        "chan = socket.socket(fileno=os.dup(fd))\n"
        "r, w = os.pipe()\n"
        "f = os.open('x.txt', os.O_CREAT | os.O_WRONLY)\n"
        "try:\n"
        "    socket.send_fds(chan, [b'c'], [r, w, f, fd])\n"
        "except OSError as exc:\n"
        "    print('refused', exc.errno)\n"
        "else:\n"
        "    _, got, _, _ = socket.recv_fds(chan, 1, 1)\n"
        "    [os.close(g) for g in got]\n"
        "print('pipe', os.fstat(r).st_ino)"
    )
    assert result.status is ExecStatus.OK, text
    pipe = f"pipe:[{text.split('pipe ')[1].split()[0]}]"
    held = _host_descriptors()
    assert not [h for h in held if h == pipe or h.endswith("/x.txt")], held
    # Asked for a stream and closed it unused: nothing connected anywhere.
    assert all(e.address == "" for e in _network(result))
    after, text = box.run("print(6 * 7)")
    assert after.status is ExecStatus.OK and "42" in text


def test_a_slow_upstream_stops_at_the_wall_limit_and_is_cut_when_idle(
    box: Box, upstreams: tuple[int, int, Path]
) -> None:
    plain = upstreams[0]
    result, text = box.run(
        f"import urllib.request\nurllib.request.urlopen('http://api.test:{plain}/slow')",
        wall_seconds=1.0,
    )
    assert result.status is ExecStatus.TIMEOUT, text
    # The interrupted cell's socket is still open in the session; the proxy cuts the silent
    # connection after idle_seconds (2 s), and the call during which that happens reports it.
    later, _ = box.run("import time; time.sleep(4)", wall_seconds=10.0)
    [event] = _network(result) + _network(later)
    assert (event.host, event.verdict, event.rule, event.key) == (
        "api.test",
        NetworkVerdict.CUT,
        "SX657",
        "network.idle_seconds",
    )


def test_pip_installs_into_the_session_and_the_next_cell_imports_it(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path, "egresspkg", "1.2", "ANSWER = 42\n")
    shadow = build_wheel(tmp_path, "colorsys", "9.9", "SHADOWED = True\n")
    with simple_index((wheel, shadow)) as port:
        backend = NativeBackend(pool_size=1, resolver=mapping_resolver({"index.test": "127.0.0.1"}))
        blobs = BlobStore(tmp_path / "blobs")
        policy = NetworkPolicy(allow=(f"index.test:{port}",), private_hosts=("index.test",))
        # pip is a heavy program: room for it on a loaded machine (the test is about where it
        # installs, not how fast).
        roomy = Limits(cpu_seconds=60.0, wall_seconds=120.0)
        session = backend.open(SessionSpec(limits=roomy, blobs=blobs, network=policy))
        box = Box(session, blobs)
        try:
            result, text = box.run(
                "import subprocess, sys\n"
                "done = subprocess.run([sys.executable, '-m', 'pip', 'install', '--no-input',\n"
                f"    '--index-url', 'http://index.test:{port}/simple/',\n"
                f"    '--trusted-host', 'index.test:{port}', 'egresspkg', 'colorsys'],\n"
                "    capture_output=True, text=True)\n"
                "print(done.returncode, done.stdout[-400:], done.stderr[-800:])",
                cpu_seconds=60.0,
                wall_seconds=120.0,
            )
            assert result.status is ExecStatus.OK, text
            assert text.startswith("0 "), text
            assert [e.verdict for e in _network(result)] == [NetworkVerdict.ALLOWED] * 4
            after, text = box.run(
                "import egresspkg, sys\nprint(egresspkg.ANSWER, egresspkg.__file__)"
            )
            assert after.status is ExecStatus.OK, text
            assert text.startswith("42 /") and "/.tmp/site-packages/egresspkg.py" in text
            # An installed module never shadows one of the interpreter's.
            _, text = box.run(
                "import colorsys\nprint(hasattr(colorsys, 'SHADOWED'), colorsys.__file__)"
            )
            assert text.startswith("False /") and "site-packages/colorsys.py" not in text, text
            # Installed into the session's own directory, not reported as an artifact, and not
            # into the interpreter the host and every other session share.
            assert not any("egresspkg" in a.name for a in result.artifacts)
            shared = subprocess.run(
                [sys.executable, "-c", "import egresspkg"], capture_output=True, check=False
            )
            assert shared.returncode != 0
        finally:
            session.close()
            backend.close()


def test_a_reset_session_gets_a_fresh_channel_to_the_same_proxy(
    box: Box, upstreams: tuple[int, int, Path]
) -> None:
    plain = upstreams[0]
    box.session.reset()
    result, text = box.run(
        f"import urllib.request\nprint(urllib.request.urlopen('http://api.test:{plain}/r').read())"
    )
    assert result.status is ExecStatus.OK, text
    assert "path=/r" in text and len(_network(result)) == 1
