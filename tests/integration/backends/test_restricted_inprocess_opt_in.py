"""In-process restricted is a distinct backend a pack must name; it is never chosen by default,
and ``doctor`` lists what it does not protect against."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from typer.testing import CliRunner

from safeexec.backends.registry import default_backend
from safeexec.backends.restricted import (
    InProcessRestrictedBackend,
    RestrictedBackend,
    in_process_gaps,
)
from safeexec.cli.app import app
from safeexec.errors import PolicyError
from safeexec.policy import load_policy, shipped_packs
from safeexec.policy.loader import parse_policy_text
from safeexec.restricted_proof.reachability import CrawlReport


def test_the_in_process_backend_has_its_own_name() -> None:
    backend = default_backend("restricted-inprocess")
    assert isinstance(backend, InProcessRestrictedBackend) and backend.in_process
    assert backend.name == "restricted-inprocess"
    plain = default_backend("restricted")
    assert isinstance(plain, RestrictedBackend) and not plain.in_process
    assert plain.name == "restricted"


@pytest.mark.parametrize("pack", shipped_packs())
def test_no_shipped_pack_admits_or_defaults_to_in_process(pack: str) -> None:
    backends = load_policy(pack).backends
    assert "restricted-inprocess" not in backends.allowed
    assert backends.default != "restricted-inprocess"


def test_a_pack_must_name_in_process_to_default_to_it() -> None:
    named = parse_policy_text(
        '[backends]\nallowed = ["restricted-inprocess"]\ndefault = "restricted-inprocess"\n'
    )
    assert named.backends.default == "restricted-inprocess"
    with pytest.raises(PolicyError):
        parse_policy_text('[backends]\nallowed = ["native"]\ndefault = "restricted-inprocess"\n')


def test_doctor_lists_what_in_process_mode_does_not_stop() -> None:
    gaps = in_process_gaps()
    assert len(gaps) >= 5 and any("C operation" in g for g in gaps)
    outcome = CliRunner().invoke(app, ["doctor", "--json"])
    document = json.loads(outcome.output)
    assert document["restricted_inprocess_does_not_protect_against"] == list(gaps)
    assert "not a security boundary" in document["restricted_inprocess"]


def test_doctor_reachability_crawls_every_pack_in_both_modes(
    monkeypatch: pytest.MonkeyPatch,
    reachability_crawl: Callable[[tuple[str, ...], bool], CrawlReport],
) -> None:
    import safeexec.cli.doctor as doctor_module

    monkeypatch.setattr(doctor_module, "shipped_packs", lambda: ("strict",))
    # The crawls themselves are the reachability test's (shared, crawled once per run).
    monkeypatch.setattr(
        doctor_module,
        "crawl_modes",
        lambda imports: tuple(reachability_crawl(imports, counting) for counting in (False, True)),
    )
    outcome = CliRunner().invoke(app, ["doctor", "--reachability"])
    lines = [line for line in outcome.output.splitlines() if line.startswith("reachability")]
    assert [line.split(":")[0] for line in lines] == [
        "reachability strict (worker)",
        "reachability strict (in-process)",
    ]
    assert all(line.endswith(" 0 forbidden reached") for line in lines), outcome.output
    assert "REACHED" not in outcome.output
