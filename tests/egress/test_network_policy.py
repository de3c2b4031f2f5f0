"""The [network] patterns and address ranges, as pure decisions."""

from __future__ import annotations

import ipaddress

import pytest

from safeexec.egress.network_policy import (
    HostPattern,
    NetworkPolicy,
    check_address,
    check_host,
    normalize_host,
    special_range,
)

POLICY = NetworkPolicy(
    allow=("pypi.org", "*.example.com:443", "api.test:8080"),
    deny=("bad.example.com",),
)


@pytest.mark.parametrize(
    ("host", "port"),
    [
        ("pypi.org", 443),
        ("pypi.org", 80),
        ("a.example.com", 443),
        ("a.b.example.com", 443),
        ("api.test", 8080),
    ],
)
def test_allowed_hosts_pass(host: str, port: int) -> None:
    assert check_host(POLICY, host, port) is None


@pytest.mark.parametrize(
    ("host", "port", "rule", "key"),
    [
        ("pypi.org", 8443, "SX650", "network.allow"),  # no port: only 80 and 443
        ("example.com", 443, "SX650", "network.allow"),  # a wildcard does not cover the apex
        ("a.example.com", 80, "SX650", "network.allow"),  # the wildcard names port 443 only
        ("evilpypi.org", 443, "SX650", "network.allow"),
        ("pypi.org.evil.net", 443, "SX650", "network.allow"),
        ("bad.example.com", 443, "SX651", "network.deny"),  # deny wins over allow
        ("127.0.0.1", 443, "SX650", "network.allow"),  # IP literals need an entry of their own
    ],
)
def test_other_hosts_are_refused_with_the_key(host: str, port: int, rule: str, key: str) -> None:
    refusal = check_host(POLICY, host, port)
    assert refusal is not None
    assert (refusal.rule, refusal.key) == (rule, key)


def test_the_refusal_says_what_to_add() -> None:
    refusal = check_host(POLICY, "files.pythonhosted.org", 443)
    assert refusal is not None and "'files.pythonhosted.org'" in refusal.reason
    refusal = check_host(POLICY, "api.test", 9000)
    assert refusal is not None and "'api.test:9000'" in refusal.reason


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("192.168.0.1", "private"),
        ("172.16.0.1", "private"),
        ("169.254.169.254", "cloud metadata"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::ffff:127.0.0.1", "loopback"),
        ("100.64.0.1", "non-global"),
        ("fd00:ec2::254", "cloud metadata"),
    ],
)
def test_special_ranges(address: str, kind: str) -> None:
    assert special_range(ipaddress.ip_address(address)) == kind


def test_a_public_address_is_not_special() -> None:
    assert special_range(ipaddress.ip_address("151.101.0.223")) is None


def test_private_address_is_refused_unless_the_name_is_listed() -> None:
    loopback = ipaddress.ip_address("127.0.0.1")
    refusal = check_address(POLICY, "api.test", loopback)
    assert refusal is not None and refusal.key == "network.private_hosts"
    listed = NetworkPolicy(allow=POLICY.allow, private_hosts=("api.test",))
    assert check_address(listed, "api.test", loopback) is None
    assert check_address(listed, "pypi.org", loopback) is not None


@pytest.mark.parametrize(
    "text", ["*.127.0.0.1", "host:0", "host:99999", "host:x", "bad_name", "ünï.com", "[::1]x"]
)
def test_malformed_patterns_raise(text: str) -> None:
    with pytest.raises(ValueError):
        HostPattern.parse(text)


def test_normalize_host() -> None:
    assert normalize_host("PyPI.org.") == "pypi.org"
    assert normalize_host("[::1]") == "::1"
    assert str(HostPattern.parse("[::1]:8443")) == "[::1]:8443"
