"""The environment fingerprint: every installed distribution with the version its metadata says."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

from safeexec._support.environment import _name_and_version, fingerprint


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
