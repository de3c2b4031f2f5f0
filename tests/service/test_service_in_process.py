"""The service runs no code in its own process unless its operator allows it: a 403 otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest
from service_support import ALICE, serve
from typer.testing import CliRunner

from safeexec.backends.fake import FakeBackend, not_executed
from safeexec.cli.app import app
from safeexec.errors import InProcessRefused
from safeexec.service.auth import TOKENS_ENV
from safeexec.service.config import ServiceConfig

IN_PROCESS = "restricted-inprocess"


def _pack(directory: Path, *, default: str) -> str:
    """The default pack, allowing the fake and the in-process mode, defaulting to ``default``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "pack.toml"
    path.write_text(
        'extends = "default"\n\n[policy]\nid = "inprocess-pack"\n\n'
        f'[backends]\nallowed = ["fake", "{IN_PROCESS}"]\ndefault = "{default}"\n',
        encoding="utf-8",
    )
    return str(path)


def test_a_config_naming_an_in_process_mode_needs_allow_in_process(tmp_path: Path) -> None:
    with pytest.raises(InProcessRefused, match="not a security boundary"):
        ServiceConfig(state_dir=tmp_path, modes=("restricted", IN_PROCESS))
    allowed = ServiceConfig(state_dir=tmp_path, modes=(IN_PROCESS,), allow_in_process=True)
    assert allowed.modes == (IN_PROCESS,)


def test_an_injected_in_process_backend_is_refused_too(tmp_path: Path) -> None:
    server = serve(tmp_path / "state", backends={IN_PROCESS: FakeBackend(not_executed)})
    with pytest.raises(InProcessRefused), server:
        pass


@pytest.mark.parametrize("default", ["fake", IN_PROCESS])
def test_asking_for_an_in_process_mode_is_a_403(tmp_path: Path, default: str) -> None:
    with (
        serve(
            tmp_path / "state",
            backends={"fake": FakeBackend(not_executed)},
            policies=(_pack(tmp_path / "packs", default=default),),
            modes=("fake",),
        ) as server,
        server.client() as alice,
    ):
        # Named by the client, or the policy's default when the client names none.
        body = {"mode": IN_PROCESS} if default == "fake" else {}
        created = alice.post("/v1/sessions", json=body)
        checked = alice.post("/v1/check", json={"code": "x = 1", **body})
        assert alice.get("/v1/sessions").json() == []
    for refused in (created, checked):
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"] == "in_process_refused"
        assert "not a security boundary" in refused.json()["message"]


def test_an_allowed_in_process_mode_runs(tmp_path: Path) -> None:
    with (
        serve(
            tmp_path / "state",
            policies=(_pack(tmp_path / "packs", default=IN_PROCESS),),
            modes=(IN_PROCESS,),
            allow_in_process=True,
        ) as server,
        server.client() as alice,
    ):
        created = alice.post("/v1/sessions", json={})
        assert created.status_code == 201, created.text
        assert created.json()["mode"] == IN_PROCESS
        session_id = created.json()["session_id"]
        ran = alice.post(f"/v1/sessions/{session_id}/run", json={"code": "print(6 * 7)"})
    assert ran.status_code == 200, ran.text
    body = ran.json()
    assert body["status"] == "ok" and body["outcome"]["decision"]["backend"] == IN_PROCESS
    assert "42" in body["observation"]["text"]


def test_serve_exits_2_on_an_in_process_mode_without_the_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKENS_ENV, f"alice={ALICE}")
    args = ["serve", "--host", "256.0.0.1", "--state-dir", str(tmp_path / "state")]
    args += ["--mode", IN_PROCESS]  # an address nothing can bind: it never serves
    printed = CliRunner().invoke(app, args)
    assert printed.exit_code == 2
    assert printed.output.startswith("safeexec: error: ") and "--allow-in-process" in printed.output
