"""The environment fingerprint: every installed distribution with the version its metadata says."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from safeexec._support.environment import (
    _name_and_version,
    distribution_changes,
    fingerprint,
    session_distributions,
    with_session,
)


def test_the_fingerprint_names_what_importlib_metadata_reads() -> None:
    expected = {
        d.name.lower().replace("_", "-"): d.version for d in metadata.distributions() if d.name
    }
    # Read again now: the cached one was read when this process first asked, and a package
    # imported since (ray) can have put more distributions on sys.path.
    assert json.loads(fingerprint.__wrapped__())["distributions"] == expected


def test_the_fingerprint_does_not_import_importlib_metadata() -> None:
    probe = (
        "import sys\nfrom safeexec._support.environment import fingerprint\nfingerprint()\n"
        "print('importlib.metadata' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False"]


def test_only_the_header_block_is_read() -> None:
    text = "Metadata-Version: 2.1\nName: Foo_Bar\nVersion: 1.2.3\n\nName: not-this\nVersion: 9\n"
    assert _name_and_version(text.splitlines()) == ("Foo_Bar", "1.2.3")


def test_metadata_without_the_headers_has_no_name() -> None:
    assert _name_and_version(["Metadata-Version: 2.1"]) == ("", "")


def test_session_distributions_come_from_dist_info_names_without_following_links(
    tmp_path: Path,
) -> None:
    site = tmp_path / "work" / ".tmp" / "site-packages"
    site.mkdir(parents=True)
    (site / "Egress_Pkg-1.2.dist-info").mkdir()
    (site / "egress_pkg.py").write_text("")
    assert session_distributions(str(tmp_path / "work"), (".tmp", "site-packages")) == {
        "egress-pkg": "1.2"
    }
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "site-packages" / "secret-1.0.dist-info").mkdir(parents=True)
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / ".tmp").symlink_to(elsewhere)
    assert session_distributions(str(linked), (".tmp", "site-packages")) == {}


def test_the_fingerprint_records_what_the_session_installed() -> None:
    base = fingerprint()
    assert with_session(base, {}) == base
    changed = with_session(base, {"egresspkg": "1.2"})
    assert json.loads(changed)["session_distributions"] == {"egresspkg": "1.2"}
    assert distribution_changes(base, changed) == ["egresspkg (not installed) → 1.2"]
