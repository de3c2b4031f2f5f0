"""A session under a policy with [network]: the gate still decides what code may import, the
proxy what it may reach, and every connection is in the step's audit event and observation."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from safeexec.audit.log import read_log
from safeexec.backends.native import NativeBackend
from safeexec.model.values import NetworkConnection, NetworkVerdict, Verdict
from safeexec.policy.loader import parse_policy_text
from safeexec.session.session import Session
from tests.egress.loopback import http_upstream, mapping_resolver


@pytest.fixture
def upstream() -> Iterator[int]:
    with http_upstream() as port:
        yield port


def _session(tmp_path: Path, port: int) -> tuple[Session, NativeBackend]:
    policy = parse_policy_text(
        f"""
        [policy]
        id = "network-test"
        [imports]
        allow = ["urllib.request", "urllib.error"]
        [network]
        allow = ["api.test:{port}"]
        private_hosts = ["api.test"]
        """
    )
    backend = NativeBackend(pool_size=1, resolver=mapping_resolver({"api.test": "127.0.0.1"}))
    session = Session(
        policy=policy, mode="native", state_dir=tmp_path / "state", backends={"native": backend}
    )
    return session, backend


def test_connections_are_audited_and_a_refusal_names_its_key(tmp_path: Path, upstream: int) -> None:
    session, backend = _session(tmp_path, upstream)
    try:
        fetch = (
            "```python\nimport urllib.request, urllib.error\n"
            f"print(urllib.request.urlopen('http://api.test:{upstream}/ok').read())\n"
            "try:\n"
            f"    urllib.request.urlopen('http://elsewhere.test:{upstream}/')\n"
            "except urllib.error.HTTPError as exc:\n"
            "    print('refused', exc.code)\n```\n"
        )
        outcome = session.run(fetch)
        assert outcome.decision.verdict is Verdict.ALLOW
        assert "path=/ok" in outcome.observation.text
        assert "refused 403" in outcome.observation.text
        assert "(SX650, policy key network.allow)" in outcome.observation.text
        effects = [e for e in outcome.event.side_effects if isinstance(e, NetworkConnection)]
        assert [(e.host, e.verdict) for e in effects] == [
            ("api.test", NetworkVerdict.ALLOWED),
            ("elsewhere.test", NetworkVerdict.REFUSED),
        ]
        logged = read_log(tmp_path / "state")[-1]
        assert [e.host for e in logged.side_effects if isinstance(e, NetworkConnection)] == [
            "api.test",
            "elsewhere.test",
        ]
        # The gate still decides imports: the network does not widen them.
        denied = session.run("```python\nimport socket\n```\n")
        assert denied.decision.verdict is Verdict.DENY
    finally:
        session.close()
        backend.close()
