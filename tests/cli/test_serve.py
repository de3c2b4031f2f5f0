"""``safeexec serve``: token helpers, and refusing to start without a way to authenticate."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from safeexec.cli.app import app
from safeexec.service.auth import TOKENS_ENV, hash_token, load_tokens


@pytest.mark.parametrize("named", [(), ("--token-id", "ci-runner")])
def test_new_token_prints_a_token_and_the_file_entry_that_admits_it(
    tmp_path: Path, named: tuple[str, ...]
) -> None:
    printed = CliRunner().invoke(app, ["serve", "--new-token", *named])
    assert printed.exit_code == 0, printed.output
    token = re.search(r"token: (\S+)", printed.output)
    assert token is not None and len(token.group(1)) >= 32
    entry = printed.output.split("\n\n", 1)[1]  # usable as printed: no placeholder to edit
    (tmp_path / "tokens.toml").write_text(entry)
    (loaded,) = load_tokens(tmp_path / "tokens.toml")
    assert loaded.sha256 == hash_token(token.group(1))
    assert loaded.token_id == (named[1] if named else loaded.token_id)
    assert token.group(1) not in entry  # the file holds the digest only


def test_hash_token_prints_the_digest_of_stdin() -> None:
    printed = CliRunner().invoke(app, ["serve", "--hash-token"], input="abc\n")
    assert printed.exit_code == 0
    assert printed.output.strip() == hash_token("abc")


@pytest.mark.parametrize("tokens_file", [None, "missing.toml", "bad.toml"])
def test_serve_without_usable_tokens_exits_2_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tokens_file: str | None
) -> None:
    monkeypatch.delenv(TOKENS_ENV, raising=False)
    (tmp_path / "bad.toml").write_text('[tokens.a]\ntoken = "plain"\n')
    args = ["serve", "--port", "1", "--state-dir", str(tmp_path / "state")]
    if tokens_file is not None:
        args += ["--tokens", str(tmp_path / tokens_file)]
    printed = CliRunner().invoke(app, args)
    assert printed.exit_code == 2
    assert printed.output.startswith("safeexec: error: ")
    assert len(printed.output.strip().splitlines()) == 1


def test_new_token_entries_can_share_a_tokens_file(tmp_path: Path) -> None:
    """Each printed entry has an id of its own: two appended to one file load side by side."""
    entries = []
    for _ in range(2):
        printed = CliRunner().invoke(app, ["serve", "--new-token"])
        entries.append(printed.output.split("\n\n", 1)[1])
    (tmp_path / "tokens.toml").write_text("\n".join(entries))
    assert len(load_tokens(tmp_path / "tokens.toml")) == 2
