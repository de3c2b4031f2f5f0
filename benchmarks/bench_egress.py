"""A 10 MB download through the egress proxy against the same download without it, on loopback.

An HTTP server on 127.0.0.1 serves the body; three clients fetch it with ``urllib``, run
round-robin: the host directly (the baseline), the host through the proxy (a TCP front handing
each connection to :class:`~safeexec.egress.EgressProxy`: the proxy's own cost), and a native
session through its proxy channel (what sandboxed code pays, cell round trip included). The
test name the clients use resolves to 127.0.0.1 through an injected resolver that lists it in
``private_hosts``. Printed as ratios against the direct download, measured in the same run.

Run: ``.venv/bin/python benchmarks/bench_egress.py [--repeat N] [--megabytes M]``
"""

from __future__ import annotations

import argparse
import http.server
import ipaddress
import socket
import tempfile
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from figures import Figure, interleaved_medians, record

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.egress import EgressProxy, NetworkPolicy
from safeexec.egress.network_policy import IPAddress
from safeexec.model.values import ExecRequest, ExecStatus, Limits

NAME = "bench.test"


def _resolve(host: str, port: int) -> list[IPAddress]:
    if host != NAME:
        raise OSError(f"{host}: unknown to the benchmark's resolver")
    return [ipaddress.ip_address("127.0.0.1")]


@contextmanager
def _upstream(size: int) -> Iterator[int]:
    body = b"x" * size

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def _proxy_front(proxy: EgressProxy) -> Iterator[int]:
    listener = socket.create_server(("127.0.0.1", 0))

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            proxy.serve(conn)

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()
        proxy.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--megabytes", type=int, default=10)
    args = parser.parse_args()
    size = args.megabytes * 1024 * 1024
    with _upstream(size) as port, tempfile.TemporaryDirectory() as tmp:
        policy = NetworkPolicy(
            allow=(f"{NAME}:{port}",),
            private_hosts=(NAME,),
            max_bytes=size * 4 * (args.repeat + 2),
            max_connections=4 * (args.repeat + 2),
        )
        url = f"http://{NAME}:{port}/"
        direct = f"http://127.0.0.1:{port}/"
        no_proxy = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        backend = NativeBackend(pool_size=1, resolver=_resolve)
        blobs = BlobStore(Path(tmp) / "blobs")
        session = backend.open(SessionSpec(limits=Limits(), blobs=blobs, network=policy))
        fetch = ExecRequest(
            action_id="bench",
            code=f"import urllib.request\nn = len(urllib.request.urlopen({url!r}).read())",
            limits=Limits(wall_seconds=60.0),
        )
        check = ExecRequest(action_id="check", code=f"assert n == {size}")
        with _proxy_front(EgressProxy(policy, resolver=_resolve)) as front:
            proxied = urllib.request.build_opener(
                urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{front}"})
            )

            def host_direct() -> None:
                assert len(no_proxy.open(direct).read()) == size

            def host_proxied() -> None:
                assert len(proxied.open(url).read()) == size

            def in_session() -> None:
                assert session.run(fetch).status is ExecStatus.OK
                assert session.run(check).status is ExecStatus.OK

            medians = interleaved_medians(
                {"direct": host_direct, "proxied": host_proxied, "session": in_session},
                repeat=args.repeat,
            )
        session.close()
        backend.close()
    mb = args.megabytes
    print(f"{mb} MB over loopback, {args.repeat} rounds, medians")
    for name, seconds in medians.items():
        ratio = seconds / medians["direct"]
        print(f"  {name:<8} {seconds * 1e3:9.1f} ms  {mb / seconds:8.1f} MB/s  {ratio:.2f}x")
    record(
        [
            Figure(
                figure=f"{mb} MB download through the egress proxy (host client)",
                peer_name="the same download without the proxy",
                safeexec=medians["proxied"],
                peer=medians["direct"],
                unit="s",
            ),
            Figure(
                figure=f"{mb} MB download in a native session (through its proxy)",
                peer_name="the same download on the host without the proxy",
                safeexec=medians["session"],
                peer=medians["direct"],
                unit="s",
            ),
        ],
        source="bench_egress",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
