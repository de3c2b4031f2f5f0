"""Views of ``zipfile`` and ``tarfile`` and ``shutil``'s archive calls (with the compression
views of ``compression_views.py``).

The libraries never see a file name: names are opened by the workdir layer and the library gets
the file object (see ``compression_views.Files``). What comes back is never the library's archive
object, whose methods read, write and extract host paths and whose class opens any path by name:
archives are :class:`ZipArchive` and :class:`TarArchive`, whose ``write``/``add`` read and
``extract``/``extractall`` write through the same layer.

Extraction is the runtime's own, not the library's: member names lose a leading ``/`` and, in
zip files, ``..`` components (as ``zipfile`` does); a tar member that would land outside the
target is refused (``OutsideDestinationError``, as the ``data`` filter does); links, devices and
FIFOs are refused (restricted mode makes no links), a tar hard link to an earlier member is
written as a copy of it. Every extracted file is bounded by ``MAX_MEMBER_BYTES`` (in
``compression_views.py``: a decompression bomb stops with ``File too large``, like the worker's
file-size limit) and by the run's budget, checked between chunks.
"""

from __future__ import annotations

import contextlib
import copy
import io
import posixpath
import stat
import tarfile
import time
import zipfile
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Self

from safeexec.restricted.guards import GuardError, RuntimeClass
from safeexec.restricted.views.compression_views import Files, compression_views, path_name
from safeexec.restricted.workdir_files import WorkdirFile, WorkdirOps

if TYPE_CHECKING:
    from safeexec.restricted.cell import Cell

_TAR_OPTIONS = frozenset(
    {"compresslevel", "format", "encoding", "errors", "pax_headers", "preset", "ignore_zeros",
     "errorlevel"}
)  # fmt: skip


# -- the lifecycle both archives share -----------------------------------------------------------


class _Archive(metaclass=RuntimeClass):
    """An archive view over the library's archive and the file it owns (``_raw``, or None)."""

    __slots__ = ("_files", "_raw")
    _raw: Any
    _files: Files

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise GuardError("archives come from zipfile.ZipFile() and tarfile.open() only")

    def _library(self) -> zipfile.ZipFile | tarfile.TarFile:
        raise NotImplementedError

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("archives cannot be pickled or copied in restricted mode")

    def close(self) -> None:
        try:
            self._library().close()
        finally:
            if self._raw is not None:
                self._raw.close()

    def __del__(self) -> None:
        # The archive before its file: left to the collector, the file may go first.
        with contextlib.suppress(Exception):
            self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- zipfile -------------------------------------------------------------------------------------


def _zip_member_name(name: str) -> str:
    """Where ``zipfile`` itself puts a member: no drive, no empty, ``.`` or ``..`` parts."""
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    return "/".join(parts)


class ZipArchive(_Archive):
    """What ``zipfile.ZipFile`` returns: reading and writing members, extraction in the workdir."""

    __slots__ = ("_zip",)
    _zip: zipfile.ZipFile

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise GuardError("zip archives come from zipfile.ZipFile() only")

    @classmethod
    def _open(cls, files: Files, file: object, mode: str, **options: Any) -> ZipArchive:
        if mode not in ("r", "w", "x", "a"):
            raise ValueError("ZipFile requires mode 'r', 'w', 'x', or 'a'")
        name = path_name(file)
        raw_mode = {"r": "rb", "w": "w+b", "x": "x+b", "a": "r+b"}[mode]
        if mode == "a" and name is not None and not files.ops.exists(name):
            raw_mode = "w+b"
        raw, owned = files.stream(file, raw_mode, "zipfile.ZipFile()")
        try:
            archive = zipfile.ZipFile(raw, mode, **options)  # type: ignore[call-overload]
        except BaseException:
            if owned:
                raw.close()
            raise
        view = object.__new__(cls)
        object.__setattr__(view, "_zip", archive)
        object.__setattr__(view, "_raw", raw if owned else None)
        object.__setattr__(view, "_files", files)
        return view

    def __setattr__(self, name: str, value: object) -> None:
        if name != "comment":
            raise GuardError(f"cannot set {name!r} on a zip archive in restricted mode")
        object.__setattr__(self, name, value)

    def _library(self) -> zipfile.ZipFile:
        return self._zip

    @property
    def filename(self) -> str | None:
        name = self._zip.filename
        return name if isinstance(name, str) else None

    @property
    def mode(self) -> str:
        return self._zip.mode

    @property
    def comment(self) -> bytes:
        return self._zip.comment

    @comment.setter
    def comment(self, value: bytes) -> None:
        self._zip.comment = value

    def namelist(self) -> list[str]:
        return self._zip.namelist()

    def infolist(self) -> list[zipfile.ZipInfo]:
        return self._zip.infolist()

    def getinfo(self, name: str) -> zipfile.ZipInfo:
        return self._zip.getinfo(name)

    def read(self, name: str | zipfile.ZipInfo, pwd: bytes | None = None) -> bytes:
        return self._zip.read(name, pwd)

    def open(
        self,
        name: str | zipfile.ZipInfo,
        mode: str = "r",
        pwd: bytes | None = None,
        *,
        force_zip64: bool = False,
    ) -> WorkdirFile:
        handle = self._zip.open(name, mode, pwd, force_zip64=force_zip64)  # type: ignore[arg-type]
        return WorkdirFile._wrap(handle, name=name if isinstance(name, str) else name.filename)

    def writestr(
        self,
        zinfo_or_arcname: str | zipfile.ZipInfo,
        data: str | bytes,
        compress_type: int | None = None,
        compresslevel: int | None = None,
    ) -> None:
        self._zip.writestr(zinfo_or_arcname, data, compress_type, compresslevel)

    def write(
        self,
        filename: object,
        arcname: str | None = None,
        compress_type: int | None = None,
        compresslevel: int | None = None,
    ) -> None:
        """Add a workdir file (or an empty directory entry), read through the workdir layer."""
        name = path_name(filename)
        if name is None:
            raise TypeError("ZipFile.write(): the file must be a string or a Path")
        ops = self._files.ops
        info = ops.stat(name)
        member = _zip_member_name(name if arcname is None else arcname)
        entry = zipfile.ZipInfo(
            member + ("/" if ops.isdir(name) else ""),
            date_time=time.localtime(max(info.st_mtime, 315532800))[:6],
        )
        entry.external_attr = (info.st_mode & 0xFFFF) << 16
        if ops.isdir(name):
            entry.external_attr |= 0x10
            self._zip.writestr(entry, b"")
            return
        entry.compress_type = self._zip.compression if compress_type is None else compress_type
        data = ops.apply(name, "write", lambda p: p.read_bytes())
        self._zip.writestr(entry, data, compresslevel=compresslevel)

    def mkdir(self, zinfo_or_directory: str | zipfile.ZipInfo, mode: int = 511) -> None:
        self._zip.mkdir(zinfo_or_directory, mode)

    def extract(
        self, member: str | zipfile.ZipInfo, path: object = None, pwd: bytes | None = None
    ) -> str:
        info = member if isinstance(member, zipfile.ZipInfo) else self._zip.getinfo(member)
        return self._extract(info, self._files.destination(path), pwd)

    def extractall(
        self, path: object = None, members: object = None, pwd: bytes | None = None
    ) -> None:
        destination = self._files.destination(path)
        chosen = self._zip.namelist() if members is None else list(members)  # type: ignore[call-overload]
        for member in chosen:
            info = member if isinstance(member, zipfile.ZipInfo) else self._zip.getinfo(member)
            self._extract(info, destination, pwd)

    def _extract(self, info: zipfile.ZipInfo, destination: str, pwd: bytes | None) -> str:
        files = self._files
        member = _zip_member_name(info.filename)
        target = posixpath.join(destination, member) if member else destination
        if info.is_dir() or not member:
            files.ops.makedirs(target, exist_ok=True)
            return target
        files.parent_dirs(target)
        with self._zip.open(info, pwd=pwd) as source:
            files.copy_out(source, target)
        return target

    def testzip(self) -> str | None:
        return self._zip.testzip()

    def printdir(self, file: object = None) -> None:
        sink = self._files.cell.sink
        sink.write(f"{'File Name':<46} {'Modified':>19} {'Size':>12}\n")
        for info in self._zip.infolist():
            year, month, day, hour, minute, second = info.date_time[:6]
            stamp = f"{year}-{month:02}-{day:02} {hour:02}:{minute:02}:{second:02}"
            sink.write(f"{info.filename:<46} {stamp} {info.file_size:>12}\n")

    def setpassword(self, pwd: bytes) -> None:
        self._zip.setpassword(pwd)

    def __repr__(self) -> str:
        return f"<restricted zip archive {self.filename!r} mode={self.mode!r}>"


# -- tarfile -------------------------------------------------------------------------------------


class TarArchive(_Archive):
    """What ``tarfile.open`` returns: members, reading, adding and extraction in the workdir."""

    __slots__ = ("_tar",)
    _tar: tarfile.TarFile

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise GuardError("tar archives come from tarfile.open() only")

    @classmethod
    def _open(
        cls, files: Files, name: object, mode: str, fileobj: object, options: dict[str, Any]
    ) -> TarArchive:
        unknown = sorted(set(options) - _TAR_OPTIONS)
        if unknown:
            raise TypeError(
                f"tarfile.open(): {', '.join(unknown)} not available in restricted mode"
            )
        if type(mode) is not str:
            raise TypeError("tarfile.open(): mode must be a string")
        kind = mode[:1]
        raw_mode = {"r": "rb", "w": "wb", "x": "xb", "a": "r+b"}.get(kind)
        if raw_mode is None:
            raise ValueError(f"tarfile.open(): mode {mode!r} is not known")
        source = name if fileobj is None else fileobj
        if source is None:
            raise ValueError("tarfile.open(): nothing to open")
        raw, owned = files.stream(source, raw_mode, "tarfile.open()")
        try:
            archive = tarfile.open(fileobj=raw, mode=mode, **options)  # type: ignore[call-overload]  # noqa: SIM115
        except BaseException:
            if owned:
                raw.close()
            raise
        view = object.__new__(cls)
        object.__setattr__(view, "_tar", archive)
        object.__setattr__(view, "_raw", raw if owned else None)
        object.__setattr__(view, "_files", files)
        return view

    def __setattr__(self, name: str, value: object) -> None:
        raise GuardError("tar archives are read-only in restricted mode")

    def _library(self) -> tarfile.TarFile:
        return self._tar

    @property
    def name(self) -> str | None:
        return getattr(self._raw, "name", None)

    def getmembers(self) -> list[tarfile.TarInfo]:
        return self._tar.getmembers()

    def getnames(self) -> list[str]:
        return self._tar.getnames()

    def getmember(self, name: str) -> tarfile.TarInfo:
        return self._tar.getmember(name)

    def next(self) -> tarfile.TarInfo | None:
        return self._tar.next()

    def __iter__(self) -> Iterator[tarfile.TarInfo]:
        return iter(self._tar)

    def extractfile(self, member: str | tarfile.TarInfo) -> WorkdirFile | None:
        handle = self._tar.extractfile(member)
        if handle is None:
            return None
        return WorkdirFile._wrap(handle, name=member if isinstance(member, str) else member.name)

    def addfile(self, tarinfo: tarfile.TarInfo, fileobj: object = None) -> None:
        if not isinstance(tarinfo, tarfile.TarInfo):
            raise TypeError("addfile() takes a TarInfo")
        self._tar.addfile(tarinfo, fileobj)  # type: ignore[arg-type]

    def add(
        self,
        name: object,
        arcname: str | None = None,
        recursive: bool = True,
        *,
        filter: object = None,
    ) -> None:
        """Add a workdir file or directory, read through the workdir layer."""
        path = path_name(name)
        if path is None:
            raise TypeError("add(): the file must be a string or a Path")
        ops = self._files.ops
        info = ops.stat(path)
        member = tarfile.TarInfo(
            posixpath.normpath(arcname if arcname is not None else path).lstrip("/")
        )
        member.mtime = int(info.st_mtime)
        member.mode = info.st_mode & 0o7777
        is_dir = ops.isdir(path)
        member.type = tarfile.DIRTYPE if is_dir else tarfile.REGTYPE
        if not is_dir:
            member.size = info.st_size
        if filter is not None:
            if not callable(filter):
                raise TypeError("add(): filter must be callable")
            chosen = filter(member)
            if chosen is None:
                return
            member = chosen
        if is_dir:
            self._tar.addfile(member)
            if recursive:
                for child in ops.listdir(path):
                    self.add(posixpath.join(path, child), posixpath.join(member.name, child),
                             recursive, filter=filter)  # fmt: skip
            return
        data = ops.apply(path, "add", lambda p: p.read_bytes())
        member.size = len(data)
        self._tar.addfile(member, io.BytesIO(data))

    def extract(
        self,
        member: str | tarfile.TarInfo,
        path: object = "",
        set_attrs: bool = True,
        *,
        numeric_owner: bool = False,
        filter: object = None,
    ) -> None:
        info = member if isinstance(member, tarfile.TarInfo) else self._tar.getmember(member)
        self._extract(info, self._files.destination(path), filter)

    def extractall(
        self,
        path: object = ".",
        members: object = None,
        *,
        numeric_owner: bool = False,
        filter: object = None,
    ) -> None:
        destination = self._files.destination(path)
        chosen = self._tar.getmembers() if members is None else list(members)  # type: ignore[call-overload]
        for info in chosen:
            self._extract(info, destination, filter)

    def _extract(self, info: tarfile.TarInfo, destination: str, filter: object) -> None:
        """One member beneath ``destination``, at least as strict as the ``data`` filter."""
        if not isinstance(info, tarfile.TarInfo):
            raise TypeError("members must be TarInfo objects")
        if callable(filter):
            chosen = filter(info, destination)
            if chosen is None:
                return
            if not isinstance(chosen, tarfile.TarInfo):
                raise TypeError("the extraction filter must return a TarInfo or None")
            info = chosen
        name = info.name.lstrip("/")
        normal = posixpath.normpath(name) if name else "."
        if normal == ".." or normal.startswith("../"):
            raise tarfile.OutsideDestinationError(info, posixpath.join(destination, name))
        target = posixpath.join(destination, normal)
        files = self._files
        if info.isdir():
            files.ops.makedirs(target, exist_ok=True)
            return
        if info.issym():
            raise (
                tarfile.AbsoluteLinkError(info)
                if info.linkname.startswith("/")
                else (
                    tarfile.FilterError(
                        f"{info.name!r} is a symbolic link; restricted mode makes none"
                    )
                )
            )
        if info.islnk():
            # Written as a copy of the earlier member it names; anything else is refused.
            try:
                linked = self._tar.getmember(info.linkname)
            except KeyError:
                raise tarfile.LinkOutsideDestinationError(info, info.linkname) from None
            if not linked.isreg():
                raise tarfile.LinkOutsideDestinationError(info, info.linkname)
            source = linked
        elif info.isreg():
            source = info
        else:
            raise tarfile.SpecialFileError(info)
        files.parent_dirs(target)
        handle = self._tar.extractfile(source)
        assert handle is not None  # a regular member always has data
        with handle:
            files.copy_out(handle, target)

    def list(self, verbose: bool = True, *, members: object = None) -> None:
        sink = self._files.cell.sink
        chosen = self._tar.getmembers() if members is None else list(members)  # type: ignore[call-overload]
        for info in chosen:
            line = info.name + ("/" if info.isdir() else "")
            if verbose:
                line = f"{stat.filemode(info.mode)} {info.size:>10} {line}"
            sink.write(line + "\n")

    def __repr__(self) -> str:
        return f"<restricted tar archive {self.name!r}>"


_TAR_EXCEPTIONS = [
    "TarError",
    "ReadError",
    "CompressionError",
    "StreamError",
    "ExtractError",
    "HeaderError",
    "FilterError",
    "AbsolutePathError",
    "OutsideDestinationError",
    "SpecialFileError",
    "AbsoluteLinkError",
    "LinkOutsideDestinationError",
]
_TAR_CONSTANTS = [
    "REGTYPE",
    "AREGTYPE",
    "DIRTYPE",
    "SYMTYPE",
    "LNKTYPE",
    "CHRTYPE",
    "BLKTYPE",
    "FIFOTYPE",
    "CONTTYPE",
    "USTAR_FORMAT",
    "GNU_FORMAT",
    "PAX_FORMAT",
    "DEFAULT_FORMAT",
    "ENCODING",
]
_ZIP_CONSTANTS = ["ZIP_STORED", "ZIP_DEFLATED", "ZIP_BZIP2", "ZIP_LZMA"]
# Attributes the code may set on the library's member records (for writing archives).
_TARINFO_WRITABLE = frozenset(
    [
        "name",
        "size",
        "mtime",
        "mode",
        "type",
        "linkname",
        "uid",
        "gid",
        "uname",
        "gname",
        "pax_headers",
    ]
)
_ZIPINFO_WRITABLE = frozenset(
    [
        "filename",
        "date_time",
        "compress_type",
        "comment",
        "extra",
        "create_system",
        "external_attr",
        "internal_attr",
    ]
)


def archive_views(cell: Cell, ops: WorkdirOps) -> Mapping[str, dict[str, object]]:
    """The archive and compression views for one executor's workdir (``shutil`` adds to the
    file view of the same name)."""
    files = Files(cell, ops)
    writable = cell.guards.writable_attributes
    writable[tarfile.TarInfo] = _TARINFO_WRITABLE
    # ``TarInfo.replace`` copies; the first copy caches the slot names on the class. Made here,
    # so that cache is not a change sandboxed code makes to a host class.
    copy.copy(tarfile.TarInfo())
    writable[zipfile.ZipInfo] = _ZIPINFO_WRITABLE
    writable[ZipArchive] = frozenset({"comment"})

    def zip_file(
        file: object,
        mode: str = "r",
        compression: int = zipfile.ZIP_STORED,
        allowZip64: bool = True,
        compresslevel: int | None = None,
        *,
        strict_timestamps: bool = True,
        metadata_encoding: str | None = None,
    ) -> ZipArchive:
        return ZipArchive._open(
            files,
            file,
            mode,
            compression=compression,
            allowZip64=allowZip64,
            compresslevel=compresslevel,
            strict_timestamps=strict_timestamps,
            metadata_encoding=metadata_encoding,
        )

    def is_zipfile(filename: object) -> bool:
        raw, owned = files.stream(filename, "rb", "zipfile.is_zipfile()")
        try:
            return zipfile.is_zipfile(raw)
        finally:
            if owned:
                raw.close()

    def tar_open(
        name: object = None,
        mode: str = "r",
        fileobj: object = None,
        bufsize: int = tarfile.RECORDSIZE,
        **options: Any,
    ) -> TarArchive:
        return TarArchive._open(files, name, mode, fileobj, options)

    def is_tarfile(name: object) -> bool:
        raw, owned = files.stream(name, "rb", "tarfile.is_tarfile()")
        try:
            return tarfile.is_tarfile(raw)
        finally:
            if owned:
                raw.close()

    views = compression_views(files)
    views["zipfile"] = {
        "ZipFile": zip_file,
        "ZipInfo": zipfile.ZipInfo,
        "is_zipfile": is_zipfile,
        "BadZipFile": zipfile.BadZipFile,
        "BadZipfile": zipfile.BadZipFile,
        "LargeZipFile": zipfile.LargeZipFile,
        **{name: getattr(zipfile, name) for name in _ZIP_CONSTANTS},
    }
    views["tarfile"] = {
        "open": tar_open,
        "TarInfo": tarfile.TarInfo,
        "is_tarfile": is_tarfile,
        **{name: getattr(tarfile, name) for name in (*_TAR_EXCEPTIONS, *_TAR_CONSTANTS)},
    }
    views["shutil"] = _shutil_archives(files, zip_file, tar_open)
    return views


# -- shutil.make_archive / unpack_archive --------------------------------------------------------

_TAR_FORMATS = {"tar": "", "gztar": "gz", "bztar": "bz2", "xztar": "xz"}
_SUFFIXES = {
    ".zip": "zip", ".tar": "tar", ".tar.gz": "gztar", ".tgz": "gztar", ".tar.bz2": "bztar",
    ".tbz2": "bztar", ".tar.xz": "xztar", ".txz": "xztar",
}  # fmt: skip


def _shutil_archives(
    files: Files,
    zip_file: Callable[..., ZipArchive],
    tar_open: Callable[..., TarArchive],
) -> dict[str, object]:
    ops = files.ops

    def make_archive(
        base_name: object,
        format: str,
        root_dir: object = None,
        base_dir: object = None,
        verbose: int = 0,
        dry_run: int = 0,
        owner: object = None,
        group: object = None,
        logger: object = None,
    ) -> str:
        base = path_name(base_name)
        if base is None:
            raise TypeError("make_archive(): base_name must be a string or a Path")
        root = "." if root_dir is None else path_name(root_dir)
        within = "." if base_dir is None else path_name(base_dir)
        if root is None or within is None:
            raise TypeError("make_archive(): root_dir and base_dir must be strings or Paths")
        if format == "zip":
            archive_name = base + ".zip"
        elif format in _TAR_FORMATS:
            suffix = {"": "", "gz": ".gz", "bz2": ".bz2", "xz": ".xz"}[_TAR_FORMATS[format]]
            archive_name = base + ".tar" + suffix
        else:
            raise ValueError(f"unknown archive format {format!r}")
        top = posixpath.normpath(posixpath.join(root, within))
        entries: list[tuple[str, str]] = []  # (workdir path, archive name)
        for folder, _dirs, names in ops.walk(top):
            relative = posixpath.normpath(posixpath.join(within, posixpath.relpath(folder, top)))
            if relative != ".":
                entries.append((folder, relative))
            entries.extend(
                (posixpath.join(folder, n), posixpath.normpath(posixpath.join(relative, n)))
                for n in sorted(names)
                if posixpath.join(folder, n) != posixpath.normpath(archive_name)
            )
        if format == "zip":
            with zip_file(archive_name, "w", compression=zipfile.ZIP_DEFLATED) as archive:
                for path, arcname in entries:
                    archive.write(path, arcname)
        else:
            with tar_open(archive_name, "w:" + _TAR_FORMATS[format]) as tar:
                for path, arcname in entries:
                    tar.add(path, arcname, recursive=False)
        return archive_name

    def unpack_archive(
        filename: object,
        extract_dir: object = None,
        format: str | None = None,
        *,
        filter: object = None,
    ) -> None:
        name = path_name(filename)
        if name is None:
            raise TypeError("unpack_archive(): filename must be a string or a Path")
        if format is None:
            format = next((f for s, f in _SUFFIXES.items() if name.endswith(s)), None)
            if format is None:
                raise ValueError(f"unknown archive format for {name!r}")
        if format == "zip":
            with zip_file(name) as archive:
                archive.extractall(extract_dir)
        elif format in _TAR_FORMATS:
            with tar_open(name, "r:" + _TAR_FORMATS[format]) as tar:
                tar.extractall("." if extract_dir is None else extract_dir, filter=filter)
        else:
            raise ValueError(f"unknown archive format {format!r}")

    return {"make_archive": make_archive, "unpack_archive": unpack_archive}
