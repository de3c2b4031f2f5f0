"""Archives in restricted mode reaching host files: member names with ``..`` or an absolute path,
links and devices in tar files, a link planted where extraction writes, host paths handed to
``write``/``add``/``gzip.open``, and a decompression bomb.

In-process the libraries run as the host's own uid; the views never let them open a path, and
extraction is the runtime's own, through the workdir layer.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from escape_support import Canaries
    from restricted_support import BoxFactory


def _workdir(tmp_path: Path) -> Path:
    return tmp_path / "work-0"  # the first session ``restricted_box`` opens


_TAR_MEMBER = (
    "import io, tarfile\nb = io.BytesIO()\nt = tarfile.open(fileobj=b, mode='w')\n"
    "i = tarfile.TarInfo({name!r})\ni.type = {kind!r}.encode()\ni.linkname = {link!r}\n"
    "i.size = 6 if i.type == tarfile.REGTYPE else 0\n"
    "t.addfile(i, io.BytesIO(b'escape') if i.size else None)\n"
    "i = tarfile.TarInfo({follow!r})\ni.size = 6\nt.addfile(i, io.BytesIO(b'escape'))\nt.close()\n"
    "b.seek(0)\ntry:\n    tarfile.open(fileobj=b).extractall('out')\n    print('EXTRACTED')\n"
    "except (tarfile.TarError, OSError) as e:\n    print('refused', type(e).__name__)\n"
)


@pytest.mark.parametrize(
    ("name", "kind", "link", "follow"),
    [
        ("../../../../escape.txt", "0", "", "ok.txt"),
        ("link", "2", "{outside}", "link/escape.txt"),
        ("link", "2", "../../..", "link/escape.txt"),
        ("hard", "1", "{secret}", "ok.txt"),
        ("dev", "3", "", "ok.txt"),
    ],
    ids=["dotdot", "symlink-out", "relative-symlink", "hardlink-secret", "device"],
)
def test_tar_members_cannot_leave_the_target(
    restricted_box: BoxFactory,
    canaries: Canaries,
    tmp_path: Path,
    name: str,
    kind: str,
    link: str,
    follow: str,
) -> None:
    box = restricted_box()
    outside = canaries.secret_file.parent
    link = link.format(outside=outside, secret=canaries.secret_file)
    outcome = box.run(_TAR_MEMBER.format(name=name, kind=kind, link=link, follow=follow))
    assert outcome.status.value == "ok" and "refused" in outcome.stdout, outcome.text
    assert not (outside / "escape.txt").exists()
    assert not any(p.is_symlink() for p in _workdir(tmp_path).rglob("*"))
    assert not list(tmp_path.glob("escape.txt"))
    box.assert_usable()


def test_zip_member_names_land_beneath_the_target(
    restricted_box: BoxFactory, canaries: Canaries, tmp_path: Path
) -> None:
    box = restricted_box()
    outside = canaries.secret_file.parent
    outcome = box.run(
        "import io, zipfile\nb = io.BytesIO()\nz = zipfile.ZipFile(b, 'w')\n"
        f"ns = ('../../../../escape.txt', {str(outside / 'escape.txt')!r}, '..\\\\..\\\\e.txt')\n"
        "for n in ns:\n"
        "    z.writestr(n, 'escape')\nz.close()\nzipfile.ZipFile(b).extractall('out')\n"
        "import os\nprint(sorted(os.listdir('out')))"
    )
    assert outcome.status.value == "ok", outcome.text
    assert not (outside / "escape.txt").exists()
    assert not list(tmp_path.rglob("escape.txt")) or all(
        _workdir(tmp_path) in p.parents for p in tmp_path.rglob("escape.txt")
    )


def test_extraction_into_a_planted_link_is_refused(
    restricted_box: BoxFactory, canaries: Canaries, tmp_path: Path
) -> None:
    box = restricted_box()
    outside = canaries.secret_file.parent
    (_workdir(tmp_path) / "out").symlink_to(outside)
    outcome = box.run(
        "import io, zipfile, tarfile, shutil\nb = io.BytesIO()\nz = zipfile.ZipFile(b, 'w')\n"
        "z.writestr('secret.txt', 'overwritten')\nz.close()\n"
        "open('a.zip', 'wb').write(b.getvalue())\n"
        "seen = []\nfor go in (lambda: zipfile.ZipFile('a.zip').extractall('out'),\n"
        "           lambda: zipfile.ZipFile('a.zip').extract('secret.txt', 'out/'),\n"
        "           lambda: shutil.unpack_archive('a.zip', 'out')):\n"
        "    try:\n        go()\n        seen.append('WROTE')\n"
        "    except OSError as e:\n        seen.append(type(e).__name__)\nprint(seen)"
    )
    assert outcome.status.value == "ok" and "WROTE" not in outcome.stdout, outcome.text
    assert canaries.secret_file.read_text() == canaries.secret


@pytest.mark.parametrize(
    "call",
    [
        "import zipfile\nzipfile.ZipFile('z.zip', 'w').write({secret!r}, 'stolen.txt')",
        "import tarfile\ntarfile.open('t.tar', 'w').add({secret!r})",
        "import gzip, pathlib\ngzip.open(pathlib.PurePath({secret!r})).read()",
        "import gzip\ntype(gzip.open('x.gz', 'wb'))({secret!r})",
        "import zipfile\nzipfile.ZipInfo.from_file({secret!r})",
        "import zipfile\nzipfile.ZipFile({secret!r}).namelist()",
        "import tarfile\ntarfile.open({secret!r}, 'w')",
    ],
    ids=[
        "zip-write",
        "tar-add",
        "gzip-purepath",
        "file-class",
        "zipinfo-from-file",
        "zip-open",
        "tar-open",
    ],
)
def test_host_paths_never_reach_the_library(
    restricted_box: BoxFactory, canaries: Canaries, call: str
) -> None:
    box = restricted_box()
    outcome = box.run(call.format(secret=str(canaries.secret_file)))
    assert outcome.status.value == "error", outcome.text
    assert any(e in outcome.text for e in ("PermissionError", "GuardError")), outcome.text
    assert canaries.secret_file.read_text() == canaries.secret
    box.assert_usable()


def test_a_zip_bomb_stops_at_the_file_size_bound(
    restricted_box: BoxFactory, tmp_path: Path
) -> None:
    box = restricted_box()
    outcome = box.run(
        "import zipfile\nz = zipfile.ZipFile('bomb.zip', 'w', compression=zipfile.ZIP_DEFLATED)\n"
        "z.writestr('bomb.bin', bytes(80 * 1024 * 1024))\nz.close()\n"
        "zipfile.ZipFile('bomb.zip').extractall('out')",
        wall_seconds=60.0,
        cpu_seconds=60.0,
    )
    assert outcome.status.value == "error" and "File too large" in outcome.text, outcome.text
    assert (_workdir(tmp_path) / "out" / "bomb.bin").stat().st_size <= 64 * 1024 * 1024
    box.run("import os\nos.remove('out/bomb.bin')")
    box.assert_usable()
