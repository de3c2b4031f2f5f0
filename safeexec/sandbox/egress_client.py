"""Child side of the session's network: TCP sockets that are really streams to the host proxy.

The kernel layers stay as they are: seccomp refuses ``socket()`` and Landlock TCP ``connect``,
with or without a network namespace. A session with ``[network]`` on gets one more descriptor,
the *egress channel* (a unix ``SOCK_SEQPACKET`` socket to its host proxy). Connecting a TCP
stream socket to the proxy endpoint (:data:`ENDPOINT`, what ``HTTP_PROXY`` names) asks the host
for a connection over the channel; the host answers with one end of a fresh stream socket pair
whose other end its proxy serves, and that end takes the socket's place. Connecting anywhere
else is refused. Descriptors only ever travel from the host to the sandbox (``recvmsg``), so a
sandbox needs no ``sendmsg`` and never has a descriptor in flight. The sandbox never names an
address the kernel routes: nothing on the host, or beyond it, can be reached by mistake, and
this module is plumbing, not a wall (code that undoes it only loses its network).
"""

from __future__ import annotations

import errno
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from safeexec.sandbox.session_env import TMP_DIR

__all__ = [
    "CHANNEL_VARIABLE",
    "ENDPOINT",
    "SESSION_SITE",
    "SITE_DIR",
    "SITE_VARIABLE",
    "install",
    "install_from_environment",
    "proxy_environment",
]

# The address HTTP_PROXY names. Nothing listens on it: connecting a socket to it hands the socket
# to the host proxy. 3128 is the customary proxy port; any other address is refused.
ENDPOINT = ("127.0.0.1", 3128)
_ENDPOINT_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
# Tells a child interpreter (pip run as a subprocess) which inherited descriptor is the channel.
CHANNEL_VARIABLE = "SAFEEXEC_EGRESS_FD"
# Where the session's own packages go (``pip install`` installs there, as PIP_TARGET says), and
# are imported from: beneath the session's TMPDIR, inside its workdir, never the interpreter's.
SITE_VARIABLE = "SAFEEXEC_SITE"
SESSION_SITE = "site-packages"
# On PYTHONPATH in network sessions: its sitecustomize calls install_from_environment().
SITE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "egress_site")
_TCP_LEVEL = socket.IPPROTO_TCP
_STREAM_FAMILIES = (socket.AF_INET, socket.AF_INET6)
_SOCK_TYPE_MASK = 0xF
_ANSWER_SECONDS = 30.0  # the host answers at once; past this its proxy is gone


def proxy_environment(workdir: str) -> dict[str, str]:
    """The variables that point ``urllib``, ``requests``, ``httpx`` and ``pip`` at the proxy,
    child interpreters at :data:`SITE_DIR`, and ``pip install`` at the session's own site
    directory beneath ``workdir``."""
    url = f"http://{ENDPOINT[0]}:{ENDPOINT[1]}"
    site = f"{workdir}/{TMP_DIR}/{SESSION_SITE}"
    return {
        "PYTHONPATH": SITE_DIR,
        SITE_VARIABLE: site,
        "PIP_TARGET": site,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "HTTP_PROXY": url,
        "HTTPS_PROXY": url,
        "http_proxy": url,
        "https_proxy": url,
        # Nothing bypasses the proxy: there is no other way out.
        "NO_PROXY": "",
        "no_proxy": "",
    }


def install(channel_fd: int) -> None:
    """Make this interpreter's TCP stream sockets go to the host proxy over ``channel_fd``, and
    let child processes inherit the channel (its number in :data:`CHANNEL_VARIABLE`)."""
    _add_session_site()
    channel = socket.socket(fileno=channel_fd)
    os.set_inheritable(channel_fd, True)
    os.environ[CHANNEL_VARIABLE] = str(channel_fd)
    socket.socket = _proxied_class(channel)  # type: ignore[misc]
    _keep_channel_in_children(channel_fd)


def _add_session_site() -> None:
    """Put the session's site directory last on ``sys.path`` (made now: a path that does not
    exist when first searched stays unsearched for the interpreter's life).

    Last, so an installed package never shadows a module of the interpreter's (the gate's
    allowlist names ``json`` meaning the stdlib's), and without ``.pth`` processing, so no
    installed package runs code when an interpreter starts."""
    site_dir = os.environ.get(SITE_VARIABLE, "")
    if site_dir:
        os.makedirs(site_dir, exist_ok=True)
        if site_dir not in sys.path:
            sys.path.append(site_dir)


def install_from_environment() -> None:
    """In a child interpreter of a network session: :func:`install` on the inherited channel
    that :data:`CHANNEL_VARIABLE` names, if any."""
    value = os.environ.get(CHANNEL_VARIABLE, "")
    if value.isdigit():
        try:
            os.fstat(int(value))
        except OSError:
            return  # a grandchild started with its descriptors closed: no network for it
        install(int(value))


def _proxied_class(channel: socket.socket) -> type[socket.socket]:
    base = socket.socket

    class ProxiedSocket(base):  # type: ignore[misc, valid-type]
        """A TCP stream socket whose only possible peer is the host proxy."""

        __slots__ = ("_connected",)

        def __init__(
            self,
            family: int = -1,
            type: int = -1,
            proto: int = -1,
            fileno: int | None = None,
        ) -> None:
            self._connected = False
            family = socket.AF_INET if family == -1 and fileno is None else family
            kind = socket.SOCK_STREAM if type == -1 and fileno is None else type
            if (
                fileno is not None
                or family not in _STREAM_FAMILIES
                or kind & _SOCK_TYPE_MASK != socket.SOCK_STREAM
            ):
                super().__init__(family, type, proto, fileno)
                return
            # A stand-in descriptor until connect() puts the host's stream in its place.
            ours, other = socket.socketpair(socket.AF_UNIX, kind)
            other.close()
            super().__init__(family, kind, 0, ours.detach())

        def connect(self, address: Any) -> None:
            self._hand_over(address)

        def connect_ex(self, address: Any) -> int:
            try:
                self._hand_over(address)
            except OSError as exc:
                return exc.errno or errno.ECONNREFUSED
            return 0

        def setsockopt(self, level: int, option: int, *value: Any) -> None:
            if level == _TCP_LEVEL and self.family in _STREAM_FAMILIES:
                return  # TCP_NODELAY and friends mean nothing on the stream to the proxy
            super().setsockopt(level, option, *value)

        def bind(self, address: Any) -> None:
            if self.family in _STREAM_FAMILIES:
                raise PermissionError(errno.EPERM, "the sandbox cannot listen on the network")
            super().bind(address)

        def _hand_over(self, address: Any) -> None:
            if self.family not in _STREAM_FAMILIES:
                super().connect(address)
                return
            host, port = address[0], address[1]
            if host not in _ENDPOINT_HOSTS or port != ENDPOINT[1]:
                raise ConnectionRefusedError(
                    errno.ECONNREFUSED,
                    f"the sandbox reaches the network only through its proxy at "
                    f"{ENDPOINT[0]}:{ENDPOINT[1]} (HTTP_PROXY), not {host}:{port}",
                )
            if self._connected:
                raise OSError(errno.EISCONN, "the socket is already connected")
            stream = _ask_for_stream(channel)
            try:
                os.dup2(stream, self.fileno(), inheritable=False)
            finally:
                os.close(stream)
            self._connected = True
            self.settimeout(self.gettimeout())  # the new stream is blocking until told

    ProxiedSocket.__name__ = ProxiedSocket.__qualname__ = "socket"
    return ProxiedSocket


def _ask_for_stream(channel: socket.socket) -> int:
    """A new stream to the host proxy: one request over the channel, one descriptor back.

    The channel is shared by the session's threads and child interpreters, and every answer
    is an equal fresh stream, so whichever request an answer meets is served by it."""
    channel.send(b"c")
    deadline = time.monotonic() + _ANSWER_SECONDS
    poller = select.poll()
    poller.register(channel, select.POLLIN)
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(left * 1000):
            raise ConnectionRefusedError(errno.ECONNREFUSED, "the host proxy did not answer")
        try:
            _data, fds, _flags, _addr = socket.recv_fds(channel, 1, 1, socket.MSG_DONTWAIT)
        except BlockingIOError:
            continue  # another thread or process took that answer: ours is still to come
        if not fds:
            raise ConnectionRefusedError(errno.ECONNREFUSED, "the host proxy is closed")
        return fds[0]


def _keep_channel_in_children(channel_fd: int) -> None:
    """``subprocess`` closes inherited descriptors by default; keep the channel open in them."""
    original: Callable[..., None] = subprocess.Popen.__init__

    def init(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
        kwargs["pass_fds"] = (*kwargs.get("pass_fds", ()), channel_fd)
        original(self, *args, **kwargs)

    subprocess.Popen.__init__ = init  # type: ignore[method-assign]
