"""The policy's [network] table: loaded into a NetworkPolicy, off by default, typed errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeexec.egress import NetworkPolicy
from safeexec.errors import PolicyError
from safeexec.policy.loader import parse_policy_text
from safeexec.policy.schema import Policy


def test_network_is_off_by_default() -> None:
    assert not Policy().network.enabled
    assert parse_policy_text("[policy]\nid = 'x'\n").network == NetworkPolicy()


def test_the_network_table_loads() -> None:
    policy = parse_policy_text(
        """
        [network]
        allow = ["pypi.org", "files.pythonhosted.org", "*.example.com:443"]
        deny = ["bad.example.com"]
        private_hosts = ["mirror.internal"]
        max_bytes = 1000
        max_connections = 3
        idle_seconds = 5
        """
    )
    assert policy.network.enabled
    assert policy.network.allow[2] == "*.example.com:443"
    assert (policy.network.max_bytes, policy.network.max_connections) == (1000, 3)
    assert policy.network.idle_seconds == 5.0


@pytest.mark.parametrize(
    ("text", "pointer"),
    [
        ('[network]\nallow = ["*.1.2.3.4"]', "/network/allow/0"),
        ('[network]\nallow = ["pypi.org:99999"]', "/network/allow/0"),
        ('[network]\ndeny = ["not a host"]', "/network/deny/0"),
        ('[network]\nallowed = ["pypi.org"]', "/network/allowed"),
        ("[network]\nmax_bytes = -1", "/network/max_bytes"),
    ],
)
def test_mistakes_are_policy_errors_with_a_pointer(text: str, pointer: str) -> None:
    with pytest.raises(PolicyError) as error:
        parse_policy_text(text)
    assert error.value.pointer == pointer


def test_the_network_guide_example_loads() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "guides" / "network.md"
    section = page.read_text(encoding="utf-8").split("## Network policy", 1)[1]
    block = section.split("```toml\n", 1)[1].split("```", 1)[0]
    policy = parse_policy_text(block)
    assert policy.network.enabled and policy.network.deny == ("uploads.example.com",)
