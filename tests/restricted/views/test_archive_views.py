"""The restricted archive views: names opened by the workdir layer, views instead of library
objects, and extraction that stays beneath the target, bounded in size."""

from __future__ import annotations

import gzip
import io
import lzma
import tarfile
import zipfile
from pathlib import Path

import pytest

from safeexec.restricted import GuardError, RestrictedExecutor
from safeexec.restricted.views import WorkerViews, compression_views

IMPORTS = ("gzip", "bz2", "lzma", "zipfile", "tarfile", "io", "os", "os.path", "pathlib", "shutil")


def run(workdir: Path, code: str) -> str | None:
    executor = RestrictedExecutor(views=WorkerViews, imports=IMPORTS, workdir=workdir)
    prelude = "import gzip, bz2, lzma, zipfile, tarfile, io, os, shutil, pathlib\n"
    return executor.execute(prelude + code, filename="<test>")


def _zip(path: Path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def _tar(path: Path, members: list[tarfile.TarInfo], data: bytes = b"x") -> None:
    with tarfile.open(path, "w") as archive:
        for member in members:
            archive.addfile(member, io.BytesIO(data) if member.isreg() else None)


def _member(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "") -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.type = kind
    member.linkname = linkname
    member.size = 1 if kind == tarfile.REGTYPE else 0
    return member


def test_compressed_files_round_trip_in_every_format(tmp_path: Path) -> None:
    code = (
        "out = []\nfor mod, name in ((gzip, 'a.gz'), (bz2, 'a.bz2'), (lzma, 'a.xz')):\n"
        "    with mod.open(name, 'wt') as f:\n        f.write('hello')\n"
        "    with mod.open(pathlib.Path(name), 'rb') as f:\n"
        "        out.append(mod.decompress(mod.compress(f.read())))\n"
        "out"
    )
    assert run(tmp_path, code) == "[b'hello', b'hello', b'hello']"
    assert {p.name for p in tmp_path.iterdir()} == {"a.gz", "a.bz2", "a.xz"}


def test_compression_options_and_text_options_reach_the_library(tmp_path: Path) -> None:
    code = (
        "with gzip.open('fast.gz', 'wb', 1) as f:\n    f.write(b'x')\n"
        "with gzip.GzipFile('stamped.gz', 'wb', mtime=7) as f:\n    f.write(b'x')\n"
        "with bz2.open('one.bz2', 'wb', 1) as f:\n    f.write(b'x')\n"
        "with bz2.BZ2File('three.bz2', 'w', compresslevel=3) as f:\n    f.write(b'x')\n"
        "with lzma.open('alone.lzma', 'wb', format=lzma.FORMAT_ALONE) as f:\n    f.write(b'x')\n"
        "with lzma.LZMAFile('sha.xz', 'w', check=lzma.CHECK_SHA256) as f:\n    f.write(b'x')\n"
        "with gzip.open('text.gz', 'wt', encoding='utf-16') as f:\n    f.write('é')\n"
        "with lzma.open('text.xz', 'wt', encoding='latin-1', newline='\\r\\n') as f:\n"
        "    f.write('é\\n')\n"
    )
    run(tmp_path, code)

    def written(name: str) -> bytes:
        return (tmp_path / name).read_bytes()

    assert written("fast.gz")[8] == 4  # the header's XFL byte: the fastest level
    assert int.from_bytes(written("stamped.gz")[4:8], "little") == 7
    assert written("one.bz2")[:4] == b"BZh1"
    assert written("three.bz2")[:4] == b"BZh3"
    assert lzma.decompress(written("alone.lzma"), format=lzma.FORMAT_ALONE) == b"x"
    assert written("sha.xz")[7] == lzma.CHECK_SHA256  # the stream flags' check id
    assert gzip.decompress(written("text.gz")) == "é".encode("utf-16")
    assert lzma.decompress(written("text.xz")) == "é\r\n".encode("latin-1")


@pytest.mark.parametrize(
    ("call", "error"),
    [
        ("gzip.open(pathlib.PurePath('/etc/passwd'))", PermissionError),
        ("gzip.open('../outside.gz', 'wb')", PermissionError),
        ("bz2.open(b'/etc/passwd')", TypeError),
        ("lzma.open(pathlib.PurePosixPath('/etc/passwd'))", PermissionError),
        ("zipfile.ZipFile('/etc/x.zip', 'w')", PermissionError),
        ("tarfile.open('/etc/passwd')", PermissionError),
        ("tarfile.open('x.tar', 'w', tarinfo=object)", TypeError),
        ("type(gzip.open('a.gz', 'wb'))('/etc/passwd')", GuardError),
        ("zipfile.ZipInfo.from_file('/etc/passwd')", GuardError),
        ("zipfile.ZipFile('z.zip', 'w').write('/etc/passwd')", PermissionError),
        ("tarfile.open('t.tar', 'w').add('/etc/passwd')", PermissionError),
        ("tarfile.open('t.tar', 'w').gettarinfo('/etc/passwd')", AttributeError),
        ("zipfile.Path('z.zip')", AttributeError),
        ("tarfile.data_filter", AttributeError),
    ],
)
def test_host_paths_and_library_objects_are_refused(
    tmp_path: Path, call: str, error: type[Exception]
) -> None:
    with pytest.raises(error):
        run(tmp_path, call)


def test_zip_member_names_cannot_climb_out(tmp_path: Path) -> None:
    work = tmp_path / "a" / "work"
    work.mkdir(parents=True)
    _zip(work / "evil.zip", {"../../up.txt": b"1", "/abs/root.txt": b"2", "ok/x.txt": b"3"})
    run(work, "zipfile.ZipFile('evil.zip').extractall('out')")
    found = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.txt"))
    assert found == ["a/work/out/abs/root.txt", "a/work/out/ok/x.txt", "a/work/out/up.txt"]


@pytest.mark.parametrize(
    ("member", "error"),
    [
        (_member("../up.txt"), tarfile.OutsideDestinationError),
        (_member("a/../../up.txt"), tarfile.OutsideDestinationError),
        (_member("link", tarfile.SYMTYPE, "/etc"), tarfile.AbsoluteLinkError),
        (_member("link", tarfile.SYMTYPE, "../.."), tarfile.FilterError),
        (_member("hard", tarfile.LNKTYPE, "/etc/passwd"), tarfile.LinkOutsideDestinationError),
        (_member("dev", tarfile.CHRTYPE), tarfile.SpecialFileError),
        (_member("fifo", tarfile.FIFOTYPE), tarfile.SpecialFileError),
    ],
    ids=["dotdot", "inner-dotdot", "abs-symlink", "rel-symlink", "hardlink-out", "device", "fifo"],
)
def test_tar_members_that_leave_the_target_or_are_special_are_refused(
    tmp_path: Path, member: tarfile.TarInfo, error: type[Exception]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    _tar(work / "evil.tar", [member])
    with pytest.raises(error):
        run(work, "tarfile.open('evil.tar').extractall('out')")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]
    assert not any(p.is_symlink() for p in work.rglob("*"))


def test_tar_absolute_names_land_beneath_the_target_and_hard_links_are_copies(
    tmp_path: Path,
) -> None:
    _tar(
        tmp_path / "t.tar", [_member("/abs/f.txt"), _member("g.txt", tarfile.LNKTYPE, "/abs/f.txt")]
    )
    run(tmp_path, "shutil.unpack_archive('t.tar', 'out')")
    assert (tmp_path / "out/abs/f.txt").read_bytes() == b"x"
    copy = tmp_path / "out/g.txt"
    assert copy.read_bytes() == b"x" and copy.stat().st_nlink == 1


def test_extraction_into_a_planted_link_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    (work / "out").symlink_to(outside)
    _zip(work / "z.zip", {"x.txt": b"1"})
    _tar(work / "t.tar", [_member("x.txt")])
    for code in (
        "zipfile.ZipFile('z.zip').extractall('out')",
        "tarfile.open('t.tar').extractall('out')",
    ):
        with pytest.raises((PermissionError, FileNotFoundError)):
            run(work, code)
    assert list(outside.iterdir()) == []


def test_a_decompression_bomb_stops_at_the_member_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compression_views, "MAX_MEMBER_BYTES", 4 << 20)
    with zipfile.ZipFile(tmp_path / "bomb.zip", "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("bomb.bin", b"\0" * (16 << 20))
    with pytest.raises(OSError, match="File too large"):
        run(tmp_path, "zipfile.ZipFile('bomb.zip').extractall()")
    assert (tmp_path / "bomb.bin").stat().st_size <= 4 << 20


def test_make_archive_and_unpack_archive_stay_in_the_workdir(tmp_path: Path) -> None:
    code = (
        "os.makedirs('src/sub')\nopen('src/a.txt', 'w').write('a')\n"
        "open('src/sub/b.txt', 'w').write('b')\n"
        "names = []\nfor fmt in ('zip', 'gztar'):\n"
        "    made = shutil.make_archive('pack-' + fmt, fmt, root_dir='src')\n"
        "    shutil.unpack_archive(made, 'un-' + fmt)\n"
        "    names.append(sorted(os.listdir('un-' + fmt)))\n"
        "names"
    )
    assert run(tmp_path, code) == "[['a.txt', 'sub'], ['a.txt', 'sub']]"
    assert (tmp_path / "un-gztar/sub/b.txt").read_text() == "b"


def test_member_records_can_be_written_only_where_listed(tmp_path: Path) -> None:
    assert run(tmp_path, "i = tarfile.TarInfo('x')\ni.size = 3\ni.size += 1\ni.size") == "4"
    with pytest.raises(GuardError):
        run(tmp_path, "i = tarfile.TarInfo('x')\ni.offset_data = 3")
    with pytest.raises(GuardError):
        run(tmp_path, "i = zipfile.ZipInfo('x')\ni.header_offset = 3")
