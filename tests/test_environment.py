"""The environment fingerprint: every installed distribution with the version its metadata says."""

from __future__ import annotations

import json
import os
from importlib import metadata
from pathlib import Path

from safeexec.environment import _name_and_version, fingerprint


class _Files(metadata.Distribution):
    def __init__(self, files: dict[str, str]) -> None:
        self._files = files

    def read_text(self, filename: str) -> str | None:
        return self._files.get(filename)

    def locate_file(self, path: str | os.PathLike[str]) -> Path:
        return Path(path)


def test_the_fingerprint_names_what_importlib_metadata_reads() -> None:
    expected = {
        d.name.lower().replace("_", "-"): d.version for d in metadata.distributions() if d.name
    }
    # Read again now: the cached one was read when this process first asked, and a package
    # imported since (ray) can have put more distributions on sys.path.
    assert json.loads(fingerprint.__wrapped__())["distributions"] == expected


def test_only_the_header_block_is_read() -> None:
    text = "Metadata-Version: 2.1\nName: Foo_Bar\nVersion: 1.2.3\n\nName: not-this\nVersion: 9\n"
    assert _name_and_version(_Files({"METADATA": text})) == ("Foo_Bar", "1.2.3")


def test_egg_info_metadata_is_read_from_pkg_info() -> None:
    assert _name_and_version(_Files({"PKG-INFO": "Name: old\nVersion: 0.1\n"})) == ("old", "0.1")


def test_a_distribution_without_metadata_has_no_name() -> None:
    assert _name_and_version(_Files({})) == ("", "")
