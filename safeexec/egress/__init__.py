"""The session's way out to the network: a host-side proxy enforcing the ``[network]`` policy.

Off unless a policy allows hosts. The sandbox never resolves names or opens sockets of its own;
it hands the proxy stream sockets over one channel, and the proxy checks, connects and audits
every connection (:mod:`~safeexec.egress.proxy`, :mod:`~safeexec.egress.network_policy`).
"""

from __future__ import annotations

from safeexec.egress.network_policy import HostPattern, NetworkPolicy, Refusal
from safeexec.egress.proxy import EgressProxy, EgressStatistics, Resolver, system_resolver

__all__ = [
    "EgressProxy",
    "EgressStatistics",
    "HostPattern",
    "NetworkPolicy",
    "Refusal",
    "Resolver",
    "system_resolver",
]
