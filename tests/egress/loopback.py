"""Loopback servers for the egress tests: a plain HTTP upstream, a TLS one signed by a test CA,
a resolver mapping test names to them, and a TCP front for the proxy (for real clients)."""

from __future__ import annotations

import base64
import datetime
import hashlib
import http.server
import ipaddress
import socket
import ssl
import threading
import zipfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from safeexec.egress import EgressProxy
from safeexec.egress.network_policy import IPAddress

LOOPBACK = ipaddress.ip_address("127.0.0.1")


def mapping_resolver(names: Mapping[str, str]) -> Callable[[str, int], list[IPAddress]]:
    """A resolver that knows only ``names`` (name -> address); anything else fails to resolve."""

    def resolve(host: str, port: int) -> list[IPAddress]:
        if host not in names:
            raise OSError(f"{host}: unknown to the test resolver")
        return [ipaddress.ip_address(names[host])]

    return resolve


class Handler(http.server.BaseHTTPRequestHandler):
    """GET /size/N answers N bytes; GET /slow hangs; anything else echoes the Host header."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if self.path.startswith("/size/"):
            body = b"x" * int(self.path.removeprefix("/size/"))
        elif self.path == "/slow":
            threading.Event().wait(30)
            body = b""
        else:
            body = f"host={self.headers.get('Host')} path={self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client the proxy cut mid-answer is what some tests are about


@contextmanager
def http_upstream(*, tls: ssl.SSLContext | None = None) -> Iterator[int]:
    """An HTTP server on 127.0.0.1 (TLS with ``tls``); yields its port."""
    with _serving(Handler, tls=tls) as port:
        yield port


@contextmanager
def canned_upstream(answer: bytes, *, pieces: int = 1) -> Iterator[int]:
    """A raw server on 127.0.0.1 that reads one request head, sends ``answer`` as it is (in
    ``pieces`` sends, a pause between them) and closes; yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    step = max(1, -(-len(answer) // pieces))

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                head = b""
                while b"\r\n\r\n" not in head and (chunk := conn.recv(65536)):
                    head += chunk
                for start in range(0, len(answer), step):
                    conn.sendall(answer[start : start + step])
                    threading.Event().wait(0.005)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


@contextmanager
def _serving(
    handler: type[http.server.BaseHTTPRequestHandler], *, tls: ssl.SSLContext | None = None
) -> Iterator[int]:
    server = _QuietServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


class CertificateAuthority:
    """A throwaway CA and one leaf certificate for the names given, written under ``where``."""

    def __init__(self, where: Path, names: tuple[str, ...]) -> None:
        now = datetime.datetime.now(datetime.UTC)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "safeexec test CA")])
        ca = (
            x509.CertificateBuilder()
            .subject_name(ca_name)
            .issuer_name(ca_name)
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            # Python 3.13 verifies strictly (VERIFY_X509_STRICT): a CA states its key usage and
            # key identifier, and a leaf names its issuer's key.
            .add_extension(
                x509.KeyUsage(
                    digital_signature=False,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
            )
            .sign(ca_key, hashes.SHA256())
        )
        key = ec.generate_private_key(ec.SECP256R1())
        leaf = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(
                x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                critical=False,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
            )
            .sign(ca_key, hashes.SHA256())
        )
        self.ca_file = where / "ca.pem"
        self.ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        self.cert_file = where / "leaf.pem"
        self.cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
        self.key_file = where / "leaf.key"
        self.key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_file, self.key_file)
        return context

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))


@contextmanager
def proxy_front(proxy: EgressProxy) -> Iterator[int]:
    """A TCP listener on 127.0.0.1 handing each connection to ``proxy``; yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            proxy.serve(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        listener.close()
        proxy.close()


def connect_through(proxy: EgressProxy) -> socket.socket:
    """A client socket whose other end the proxy serves (no listener involved)."""
    ours, theirs = socket.socketpair()
    proxy.serve(theirs)
    ours.settimeout(10)
    return ours


def read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def build_wheel(where: Path, name: str, version: str, source: str) -> Path:
    """A pure-Python wheel of one module ``name`` holding ``source``, built by hand (PEP 427)."""
    wheel = where / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": source.encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: safeexec-tests\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [f"{path},sha256={_urlsafe_digest(data)},{len(data)}" for path, data in files.items()]
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


def _urlsafe_digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


@contextmanager
def simple_index(wheels: tuple[Path, ...]) -> Iterator[int]:
    """A PEP 503 simple index on 127.0.0.1 serving ``wheels``; yields its port."""
    by_name = {w.name.split("-")[0].lower(): w for w in wheels}

    class Index(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            parts = [p for p in self.path.split("/") if p]
            body, kind = b"", "text/html"
            if parts[:1] == ["simple"] and len(parts) == 2 and parts[1] in by_name:
                wheel = by_name[parts[1]]
                digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
                body = (
                    f'<html><body><a href="/files/{wheel.name}#sha256={digest}">{wheel.name}</a>'
                    "</body></html>"
                ).encode()
            elif parts[:1] == ["files"] and len(parts) == 2:
                found = [w for w in wheels if w.name == parts[1]]
                if found:
                    body, kind = found[0].read_bytes(), "application/octet-stream"
            status = 200 if body else 404
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    with _serving(Index) as port:
        yield port
