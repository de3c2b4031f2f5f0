"""A session under a policy with [network]: the gate still decides what code may import, the
proxy what it may reach, and every connection is in the step's audit event and observation."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from safeexec.audit.log import read_log
from safeexec.audit.timeline import show_log
from safeexec.backends.native import NativeBackend
from safeexec.model.values import NetworkConnection, NetworkVerdict, Verdict
from safeexec.policy.engine_rules import IMPORT_NOT_ALLOWED
from safeexec.policy.loader import load_policy, parse_policy_text
from safeexec.session.session import Session
from tests.egress.loopback import build_wheel, http_upstream, mapping_resolver, simple_index


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
        shown = show_log(tmp_path / "state")
        assert f"network api.test:{upstream} GET allowed via 127.0.0.1: " in shown
        assert f"network elsewhere.test:{upstream} GET refused: " in shown
        assert "(SX650 network.allow: elsewhere.test" in shown
        # The gate still decides imports: the network does not widen them.
        denied = session.run("```python\nimport socket\n```\n")
        assert denied.decision.verdict is Verdict.DENY
    finally:
        session.close()
        backend.close()


def test_pip_install_then_import_under_the_import_allowlist(tmp_path: Path) -> None:
    wheels = (
        build_wheel(tmp_path, "egresspkg", "1.2", "ANSWER = 42\n"),
        build_wheel(tmp_path, "otherpkg", "0.1", "import os\n"),
    )
    with simple_index(wheels) as port:
        policy = parse_policy_text(
            f"""
            [policy]
            id = "pip-test"
            [imports]
            allow = ["subprocess", "sys", "json", "egresspkg"]
            [network]
            allow = ["index.test:{port}"]
            private_hosts = ["index.test"]
            """
        )
        backend = NativeBackend(pool_size=1, resolver=mapping_resolver({"index.test": "127.0.0.1"}))
        session = Session(
            policy=policy, mode="native", state_dir=tmp_path / "state", backends={"native": backend}
        )
        try:
            install = session.run(
                "```python\nimport subprocess, sys\n"
                "done = subprocess.run([sys.executable, '-m', 'pip', 'install', '--no-input',\n"
                f"    '--index-url', 'http://index.test:{port}/simple/',\n"
                f"    '--trusted-host', 'index.test:{port}', 'egresspkg', 'otherpkg'])\n"
                "print('pip exit', done.returncode)\n```\n",
                timeout=60,
            )
            assert "pip exit 0" in install.observation.text, install.observation.text
            environment = json.loads(session.blobs.get(install.event.environment_ref or ""))
            assert environment["session_distributions"] == {"egresspkg": "1.2", "otherpkg": "0.1"}
            used = session.run("```python\nimport egresspkg\nprint(egresspkg.ANSWER)\n```\n")
            assert used.decision.verdict is Verdict.ALLOW and "42" in used.observation.text
            # Installed, but outside the import allowlist: the gate refuses it, with the rule.
            refused = session.run("```python\nimport otherpkg\n```\n")
            assert refused.decision.verdict is Verdict.DENY
            assert refused.result is None
            [finding] = refused.decision.findings
            assert finding.rule == IMPORT_NOT_ALLOWED.id and "otherpkg" in finding.message
            assert IMPORT_NOT_ALLOWED.id in refused.observation.text
        finally:
            session.close()
            backend.close()


def test_pandas_reads_a_csv_from_an_allowed_host_under_a_shipped_pack(tmp_path: Path) -> None:
    class Csv(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            body = b"city,rain\nlyon,3\nnantes,7\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/csv")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Csv)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    pack = tmp_path / "pack.toml"
    pack.write_text(
        f'extends = "data-analysis"\n[network]\nallow = ["data.test:{port}"]\n'
        'private_hosts = ["data.test"]\n'
    )
    backend = NativeBackend(pool_size=1, resolver=mapping_resolver({"data.test": "127.0.0.1"}))
    session = Session(
        policy=load_policy(pack),
        mode="native",
        state_dir=tmp_path / "s",
        backends={"native": backend},
    )
    try:
        outcome = session.run(
            "```python\nimport pandas as pd\n"
            f"df = pd.read_csv('http://data.test:{port}/rain.csv')\n"
            "print(int(df['rain'].sum()))\n```\n"
        )
        assert outcome.decision.verdict is Verdict.ALLOW, outcome.observation.text
        assert "10" in outcome.observation.text, outcome.observation.text
        [effect] = [e for e in outcome.event.side_effects if isinstance(e, NetworkConnection)]
        assert (effect.host, effect.verdict) == ("data.test", NetworkVerdict.ALLOWED)
    finally:
        session.close()
        backend.close()
        server.shutdown()
        server.server_close()
