"""The ``[network]`` policy as a value, and the decisions the egress proxy takes with it.

A host is allowed when an ``allow`` pattern matches it and no ``deny`` pattern does; a pattern
is ``name``, ``*.name`` (any subdomain, not the apex) or an IP literal, with ``:port``
(without one: ports 80 and 443). Every address a name resolves to must be public unless the
name is listed in ``private_hosts``. Each refusal carries the rule id (``SX65x``) and the policy
key that would change it, which the observation shows the model.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from safeexec.egress.catalogue import (
    HOST_DENIED,
    HOST_NOT_ALLOWED,
    PRIVATE_ADDRESS,
    NetworkRule,
)
from safeexec.model.fieldwise import Fieldwise

__all__ = [
    "DEFAULT_PORTS",
    "HostPattern",
    "NetworkPolicy",
    "Refusal",
    "check_address",
    "check_host",
    "normalize_host",
    "special_range",
]

DEFAULT_PORTS = (80, 443)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_LABEL = r"(?!-)[a-z0-9-]{1,63}(?<!-)"
_NAME = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
# Cloud metadata endpoints that are not all in a range ipaddress calls special.
_METADATA = frozenset(
    {
        ipaddress.ip_address("169.254.169.254"),
        ipaddress.ip_address("169.254.170.2"),
        ipaddress.ip_address("100.100.100.200"),
        ipaddress.ip_address("fd00:ec2::254"),
    }
)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class Refusal(Fieldwise):
    """Why a connection was refused: the rule id, the policy key that governs it, and a
    sentence for the model."""

    rule: str
    key: str
    reason: str

    @classmethod
    def of(cls, rule: NetworkRule, reason: str) -> Refusal:
        """A refusal under ``rule`` (its id and key), saying ``reason``."""
        return cls(rule=rule.id, key=rule.key, reason=reason)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class HostPattern(Fieldwise):
    """One ``allow``/``deny`` entry: a name (``wildcard``: any subdomain of it) and its ports
    (empty: :data:`DEFAULT_PORTS`)."""

    name: str
    wildcard: bool = False
    ports: tuple[int, ...] = ()

    @classmethod
    def parse(cls, text: str) -> HostPattern:
        """Parse ``host``, ``*.host``, ``host:port`` or ``[v6]:port``; ``ValueError`` names
        what is wrong."""
        rest, port_text = text.strip(), ""
        if rest.startswith("["):
            inner, _, after = rest[1:].partition("]")
            rest, port_text = inner, after.removeprefix(":")
            if after and not after.startswith(":"):
                raise ValueError(f"{text!r}: expected [address]:port")
        elif rest.count(":") == 1:
            rest, port_text = rest.split(":")
        wildcard = rest.startswith("*.")
        name = normalize_host(rest.removeprefix("*."))
        if wildcard and _is_ip(name):
            raise ValueError(f"{text!r}: a wildcard applies to names, not addresses")
        ports: tuple[int, ...] = ()
        if port_text:
            if not (port_text.isascii() and port_text.isdigit()) or not 0 < int(port_text) < 65536:
                raise ValueError(f"{text!r}: the port must be a number from 1 to 65535")
            ports = (int(port_text),)
        return cls(name=name, wildcard=wildcard, ports=ports)

    def matches(self, host: str, port: int) -> bool:
        """Whether ``host`` (normalized) and ``port`` fall under this pattern."""
        if port not in (self.ports or DEFAULT_PORTS):
            return False
        if self.wildcard:
            return host.endswith("." + self.name)
        return host == self.name

    def __str__(self) -> str:
        name = f"[{self.name}]" if ":" in self.name else self.name
        host = f"*.{name}" if self.wildcard else name
        return f"{host}:{self.ports[0]}" if self.ports else host


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class NetworkPolicy(Fieldwise):
    """The ``[network]`` table. An empty ``allow`` means no network at all (no proxy).

    ``max_bytes`` bounds the bytes of all the session's connections, both ways together;
    ``max_connections`` how many it may open; ``private_hosts`` names allowed to resolve to
    loopback, private, link-local, metadata or multicast addresses (an internal mirror);
    ``connect_seconds`` and ``idle_seconds`` bound a connection's setup and its silences.
    """

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    private_hosts: tuple[str, ...] = ()
    max_bytes: int = 256 * 1024 * 1024
    max_connections: int = 64
    connect_seconds: float = 10.0
    idle_seconds: float = 60.0

    @property
    def enabled(self) -> bool:
        """Whether sessions under this policy get a proxy."""
        return bool(self.allow)

    def allow_patterns(self) -> tuple[HostPattern, ...]:
        return tuple(HostPattern.parse(item) for item in self.allow)

    def deny_patterns(self) -> tuple[HostPattern, ...]:
        return tuple(HostPattern.parse(item) for item in self.deny)


def normalize_host(host: str) -> str:
    """``host`` lowercased without a trailing dot, an IP literal in its compressed form;
    ``ValueError`` for anything that is neither an ASCII name nor an address."""
    text = host.strip().lower().rstrip(".")
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if _is_ip(text):
        return str(ipaddress.ip_address(text))
    if not _NAME.match(text) or len(text) > 253:
        raise ValueError(f"{host!r} is not a host name (IDNA names must be given as xn--...)")
    return text


def check_host(policy: NetworkPolicy, host: str, port: int) -> Refusal | None:
    """Refuse ``host:port`` unless an ``allow`` pattern matches and no ``deny`` pattern does."""
    for pattern in policy.deny_patterns():
        if pattern.matches(host, port) or (pattern.ports == () and _name_matches(pattern, host)):
            return Refusal.of(
                HOST_DENIED,
                reason=f"{_show(host, port)} matches [network] deny entry {str(pattern)!r}",
            )
    if not any(pattern.matches(host, port) for pattern in policy.allow_patterns()):
        return Refusal.of(
            HOST_NOT_ALLOWED,
            reason=f"{_show(host, port)} is not in [network] allow "
            f"(add {_suggest(host, port)!r} to allow it)",
        )
    return None


def check_address(policy: NetworkPolicy, host: str, address: IPAddress) -> Refusal | None:
    """Refuse an address in a special range unless ``host`` is one of ``private_hosts``."""
    kind = special_range(address)
    if kind is None or host in {normalize_host(h) for h in policy.private_hosts}:
        return None
    return Refusal.of(
        PRIVATE_ADDRESS,
        reason=f"{host} resolves to {address}, a {kind} address "
        f"(add {host!r} to [network] private_hosts to allow it)",
    )


def special_range(address: IPAddress) -> str | None:
    """The kind of non-public range ``address`` is in, or None for a public address."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return special_range(address.ipv4_mapped)
    checks = (
        (address in _METADATA, "cloud metadata"),
        (address.is_loopback, "loopback"),
        (address.is_link_local, "link-local"),
        (address.is_multicast, "multicast"),
        (address.is_unspecified, "unspecified"),
        (address.is_private, "private"),
        (address.is_reserved, "reserved"),
        (not address.is_global, "non-global"),
    )
    return next((kind for hit, kind in checks if hit), None)


def _name_matches(pattern: HostPattern, host: str) -> bool:
    # A deny entry without a port denies the host on every port, not only 80 and 443.
    return host.endswith("." + pattern.name) if pattern.wildcard else host == pattern.name


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _show(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _suggest(host: str, port: int) -> str:
    return host if port in DEFAULT_PORTS else _show(host, port)
