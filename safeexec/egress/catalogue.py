"""The egress proxy's rule ids (SX65x): one home for their ids, names and documentation.

:mod:`safeexec.policy.network_rules` turns these into policy ``Rule`` values so ``safeexec
explain SX650`` documents them like every other rule; the proxy names them in its events.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BYTES_EXCEEDED",
    "CONNECTIONS_EXCEEDED",
    "HOST_DENIED",
    "HOST_NOT_ALLOWED",
    "IDLE_TIMEOUT",
    "MALFORMED_REQUEST",
    "NETWORK_RULES",
    "PRIVATE_ADDRESS",
    "SNI_MISMATCH",
    "NetworkRule",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class NetworkRule:
    """One SX65x rule: the ``[network]`` key that governs it, and its documentation."""

    id: str
    name: str
    key: str
    description: str
    rationale: str
    example: str


HOST_NOT_ALLOWED = NetworkRule(
    id="SX650",
    name="network-host-not-allowed",
    key="network.allow",
    description=(
        "Refuses a connection to a host and port no `[network] allow` entry names. An entry is "
        "`host`, `*.host` (any subdomain, not the apex) or an IP literal, with an optional "
        "`:port`; without a port it covers 80 and 443. The refusal says which entry to add."
    ),
    rationale=(
        "The allowlist is the whole network the session has: code that fetches a URL the "
        "operator did not name is refused, and the model sees why."
    ),
    example=(
        'urllib.request.urlopen("https://example.org/") with allow = ["pypi.org"]: '
        "403 from the proxy; the observation names SX650 and `network.allow`."
    ),
)
HOST_DENIED = NetworkRule(
    id="SX651",
    name="network-host-denied",
    key="network.deny",
    description=(
        "Refuses a host a `[network] deny` entry names, even when an `allow` entry covers it "
        "(deny `uploads.example.com` inside allow `*.example.com`). A deny entry without a "
        "port covers every port."
    ),
    rationale="Carving exceptions out of a wildcard must not need listing every other name.",
    example='allow = ["*.example.com"], deny = ["uploads.example.com"]',
)
PRIVATE_ADDRESS = NetworkRule(
    id="SX652",
    name="network-private-address",
    key="network.private_hosts",
    description=(
        "Refuses an allowed name that resolves (on the host; the sandbox never resolves) to a "
        "loopback, private, link-local, cloud-metadata, multicast or otherwise non-global "
        "address, unless the name is listed in `[network] private_hosts`. Every address of the "
        "name is checked, and the proxy connects to a checked address: no second lookup."
    ),
    rationale=(
        "An allowed public name whose DNS an attacker controls can be pointed at the host's "
        "own services or the cloud metadata endpoint (DNS rebinding); the check and the "
        "connect use the same address."
    ),
    example="a name that resolves to 169.254.169.254 or 127.0.0.1",
)
SNI_MISMATCH = NetworkRule(
    id="SX653",
    name="network-sni-mismatch",
    key="network.allow",
    description=(
        "Refuses a CONNECT tunnel whose first bytes are not a TLS ClientHello naming the "
        "CONNECT host (SNI). The tunnel is cut before the proxy connects anywhere."
    ),
    rationale=(
        "Without it, a tunnel opened to an allowed name could greet another virtual host on a "
        "shared front end (domain fronting), or carry a protocol other than TLS."
    ),
    example="CONNECT pypi.org:443 followed by a ClientHello for evil.example",
)
BYTES_EXCEEDED = NetworkRule(
    id="SX654",
    name="network-bytes-exceeded",
    key="network.max_bytes",
    description=(
        "Cuts the connection that would carry the session past `[network] max_bytes` (both "
        "directions of all its connections together), as the bytes pass, not afterwards."
    ),
    rationale="A session's network use is bounded like its CPU, memory and output.",
    example="max_bytes = 1000000 and a 10 MB download: cut after 1 MB",
)
CONNECTIONS_EXCEEDED = NetworkRule(
    id="SX655",
    name="network-connections-exceeded",
    key="network.max_connections",
    description="Refuses connections past `[network] max_connections` for the session.",
    rationale="Bounds how many upstream connections (and proxy threads) one session costs.",
    example="max_connections = 2 and a third request",
)
MALFORMED_REQUEST = NetworkRule(
    id="SX656",
    name="network-malformed-request",
    key="network",
    description=(
        "Refuses a proxy request the proxy cannot read safely: not HTTP/1.x, a head over 16 "
        "KiB, a plain request whose Host header disagrees with its URL, credentials in the "
        "authority, an `https://` URL outside CONNECT."
    ),
    rationale=(
        "A request two parsers could read differently is a way past the host check; the proxy "
        "refuses instead of guessing."
    ),
    example="GET http://pypi.org/ with Host: evil.example",
)

IDLE_TIMEOUT = NetworkRule(
    id="SX657",
    name="network-idle-timeout",
    key="network.idle_seconds",
    description=(
        "Cuts a connection on which neither end sent anything for `[network] idle_seconds` "
        "(and one whose request head does not arrive in that time)."
    ),
    rationale=(
        "A cell stopped at its wall limit may leave a socket open in the session; a silent "
        "upstream must not hold a connection and a proxy thread for the session's life."
    ),
    example="a server that never answers, with idle_seconds = 30: cut after 30 s of silence",
)

NETWORK_RULES: tuple[NetworkRule, ...] = (
    HOST_NOT_ALLOWED,
    HOST_DENIED,
    PRIVATE_ADDRESS,
    SNI_MISMATCH,
    BYTES_EXCEEDED,
    CONNECTIONS_EXCEEDED,
    MALFORMED_REQUEST,
    IDLE_TIMEOUT,
)
