"""Workdir-confined views of ``os``, ``os.path``, ``pathlib``, ``glob``, ``shutil``, ``tempfile``.

These are not the real modules: every call that touches the file system goes through
:class:`~safeexec.restricted.workdir_files.WorkdirOps` (``BoundPath`` beneath the
workdir, links never followed), and the pure path functions are ``posixpath``'s. ``os.environ``
is empty (the in-process mode shares the host's environment, so nothing of it is shown);
``os.getcwd()`` is the workdir. What models write (``os.makedirs(..., exist_ok=True)``,
``os.listdir``, ``os.walk``, ``Path(...).write_text``, ``glob.glob("*.csv")``, ``shutil.copy``,
``tempfile.TemporaryDirectory()``) runs unchanged; everything else is simply absent.
"""

from __future__ import annotations

import os
import pathlib
import posixpath
import types
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from safeexec.restricted.guards import GuardError, RuntimeClass
from safeexec.restricted.workdir_files import WorkdirFile, WorkdirOps

if TYPE_CHECKING:
    from safeexec.restricted.cell import Cell

# The pure ``os.path`` functions: string work only, no file system, no environment.
_PURE_PATH = (
    "join",
    "basename",
    "dirname",
    "split",
    "splitext",
    "normpath",
    "isabs",
    "commonprefix",
    "commonpath",
    "sep",
)


class WorkdirPath(metaclass=RuntimeClass):
    """``pathlib.Path`` for sandboxed code: pure path arithmetic on a string, and I/O only
    through the workdir (the executor binds each session's ``WorkdirOps`` to a subclass)."""

    __slots__ = ("_path",)
    _path: str
    _ops: WorkdirOps

    def __init__(self, *parts: object) -> None:
        texts = [str(p) if isinstance(p, WorkdirPath | pathlib.PurePath) else p for p in parts]
        if not all(type(t) is str for t in texts):
            raise TypeError("Path() takes strings or paths")
        strings = [str(t) for t in texts]
        joined = posixpath.join(*strings) if strings else "."
        object.__setattr__(self, "_path", posixpath.normpath(joined) if joined else ".")

    def __setattr__(self, name: str, value: object) -> None:
        raise GuardError("paths are immutable")

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("paths cannot be pickled or copied in restricted mode")

    def _new(self, *parts: str) -> WorkdirPath:
        return type(self)(*parts)

    # -- pure ----------------------------------------------------------------------------------
    def __str__(self) -> str:
        return self._path

    def __repr__(self) -> str:
        return f"PosixPath({self._path!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WorkdirPath) and other._path == self._path

    def __hash__(self) -> int:
        return hash(self._path)

    def __lt__(self, other: WorkdirPath) -> bool:
        return self._path < other._path

    def __truediv__(self, other: object) -> WorkdirPath:
        if not isinstance(other, WorkdirPath | str):
            return NotImplemented
        return self._new(self._path, str(other))

    def __rtruediv__(self, other: str) -> WorkdirPath:
        return self._new(other, self._path)

    def joinpath(self, *parts: str) -> WorkdirPath:
        return self._new(self._path, *parts)

    @property
    def name(self) -> str:
        return posixpath.basename(self._path) if self._path != "." else ""

    @property
    def suffix(self) -> str:
        return posixpath.splitext(self.name)[1]

    @property
    def suffixes(self) -> list[str]:
        name = self.name.lstrip(".")
        return ["." + s for s in name.split(".")[1:]]

    @property
    def stem(self) -> str:
        return self.name[: len(self.name) - len(self.suffix)] if self.suffix else self.name

    @property
    def parent(self) -> WorkdirPath:
        return self._new(posixpath.dirname(self._path) or ".")

    @property
    def parts(self) -> tuple[str, ...]:
        return pathlib.PurePosixPath(self._path).parts

    def with_suffix(self, suffix: str) -> WorkdirPath:
        return self._new(str(pathlib.PurePosixPath(self._path).with_suffix(suffix)))

    def with_name(self, name: str) -> WorkdirPath:
        return self._new(str(pathlib.PurePosixPath(self._path).with_name(name)))

    def with_stem(self, stem: str) -> WorkdirPath:
        return self.with_name(stem + self.suffix)

    def relative_to(self, other: object) -> WorkdirPath:
        return self._new(str(pathlib.PurePosixPath(self._path).relative_to(str(other))))

    def is_absolute(self) -> bool:
        return self._path.startswith("/")

    def as_posix(self) -> str:
        return self._path

    def match(self, pattern: str) -> bool:
        return pathlib.PurePosixPath(self._path).match(pattern)

    # -- the workdir ---------------------------------------------------------------------------
    @classmethod
    def cwd(cls) -> WorkdirPath:
        return cls(cls._ops.root)

    def absolute(self) -> WorkdirPath:
        return self if self.is_absolute() else self._new(self._ops.root, self._path)

    def resolve(self, strict: bool = False) -> WorkdirPath:
        return self.absolute()

    def exists(self) -> bool:
        return self._ops.exists(self._path)

    def is_file(self) -> bool:
        return self._ops.isfile(self._path)

    def is_dir(self) -> bool:
        return self._ops.isdir(self._path)

    def stat(self) -> os.stat_result:
        return self._ops.stat(self._path)

    def iterdir(self) -> Iterator[WorkdirPath]:
        return iter([self._new(self._path, n) for n in self._ops.listdir(self._path)])

    def glob(self, pattern: str) -> Iterator[WorkdirPath]:
        prefix = "" if self._path == "." else self._path + "/"
        found = self._ops.glob(prefix + pattern, recursive="**" in pattern)
        return iter([self._new(f) for f in found])

    def rglob(self, pattern: str) -> Iterator[WorkdirPath]:
        return self.glob("**/" + pattern)

    def mkdir(self, mode: int = 0o777, parents: bool = False, exist_ok: bool = False) -> None:
        if parents:
            self._ops.makedirs(self._path, mode, exist_ok=exist_ok)
            return
        try:
            self._ops.mkdir(self._path, mode)
        except FileExistsError:
            if not (exist_ok and self.is_dir()):
                raise

    def open(
        self,
        mode: str = "r",
        buffering: int = -1,
        encoding: str | None = None,
        errors: str | None = None,
        newline: str | None = None,
    ) -> WorkdirFile:
        return self._ops.open(self._path, mode, buffering, encoding, errors, newline)

    def read_text(self, encoding: str | None = None, errors: str | None = None) -> str:
        with self.open("r", encoding=encoding, errors=errors) as handle:
            return str(handle.read())

    def read_bytes(self) -> bytes:
        with self.open("rb") as handle:
            return bytes(handle.read())  # type: ignore[arg-type]

    def write_text(self, data: str, encoding: str | None = None, errors: str | None = None) -> int:
        if type(data) is not str:
            raise TypeError(f"data must be str, not {type(data).__name__}")
        with self.open("w", encoding=encoding, errors=errors) as handle:
            return handle.write(data)

    def write_bytes(self, data: bytes) -> int:
        with self.open("wb") as handle:
            return handle.write(bytes(data))

    def touch(self, exist_ok: bool = True) -> None:
        if self.exists():
            if not exist_ok:
                raise FileExistsError(17, "File exists", self._path)
            return
        self.open("a").close()

    def unlink(self, missing_ok: bool = False) -> None:
        try:
            self._ops.remove(self._path)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def rmdir(self) -> None:
        self._ops.rmdir(self._path)

    def rename(self, target: object) -> WorkdirPath:
        self._ops.rename(self._path, str(target))
        return self._new(str(target))

    replace = rename


class _TemporaryDirectory(metaclass=RuntimeClass):
    """``tempfile.TemporaryDirectory`` beneath the workdir, removed on exit."""

    def __init__(self, ops: WorkdirOps, suffix: str, prefix: str, dir: str | None) -> None:
        self._ops = ops
        self.name = ops.mkdtemp(suffix, prefix, dir)

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("runtime objects cannot be pickled or copied in restricted mode")

    def __enter__(self) -> str:
        return self.name

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    def cleanup(self) -> None:
        self._ops.rmtree(self.name, ignore_errors=True)


def _text(value: object) -> str:
    if isinstance(value, WorkdirPath):
        return str(value)
    if type(value) is not str:
        raise TypeError(f"expected a path string, not {type(value).__name__}")
    return value


def _paths(function: Callable[..., object], count: int = 1) -> Callable[..., object]:
    """``function`` taking its first ``count`` arguments as paths (strings or ``Path``)."""

    def call(*args: object, **kwargs: object) -> object:
        converted = [_text(a) if i < count else a for i, a in enumerate(args)]
        return function(*converted, **kwargs)

    call.__name__ = call.__qualname__ = getattr(function, "__name__", "call")
    call.__doc__ = getattr(function, "__doc__", None)
    return call


def workdir_views(cell: Cell, ops: WorkdirOps) -> Mapping[str, dict[str, object]]:
    """The attributes of each confined module view, for the session's workdir."""
    path_class = type("Path", (WorkdirPath,), {"__slots__": (), "_ops": ops})
    ops.admit_path_type(path_class)
    os_path: dict[str, object] = {name: getattr(posixpath, name) for name in _PURE_PATH}
    os_path.update(
        exists=_paths(ops.exists),
        isfile=_paths(ops.isfile),
        isdir=_paths(ops.isdir),
        getsize=_paths(ops.getsize),
        getmtime=_paths(ops.getmtime),
        abspath=_paths(lambda p: posixpath.normpath(posixpath.join(ops.root, p))),
        relpath=_paths(lambda p, start=".": posixpath.relpath(p, start)),
    )

    def getenv(key: str, default: str | None = None) -> str | None:
        return default

    def temporary_directory(
        suffix: str | None = None, prefix: str | None = None, dir: object = None
    ) -> _TemporaryDirectory:
        where = None if dir is None else _text(dir)
        return _TemporaryDirectory(ops, suffix or "", prefix or "tmp", where)

    def disk_usage(path: object) -> object:
        ops.stat(_text(path))  # beneath the workdir, or refused
        return ops.disk_usage()

    return {
        "os.path": os_path,
        "os": {
            "sep": "/",
            "linesep": "\n",
            "curdir": ".",
            "pardir": "..",
            "name": "posix",
            "environ": types.MappingProxyType({}),
            "getenv": getenv,
            "getcwd": lambda: ops.root,
            "cpu_count": os.cpu_count,
            "listdir": _paths(ops.listdir),
            "walk": _paths(ops.walk),
            "stat": _paths(ops.stat),
            "mkdir": _paths(ops.mkdir),
            "makedirs": _paths(ops.makedirs),
            "remove": _paths(ops.remove),
            "unlink": _paths(ops.remove),
            "rmdir": _paths(ops.rmdir),
            "rename": _paths(ops.rename, 2),
            "replace": _paths(ops.rename, 2),
        },
        "pathlib": {
            "Path": path_class,
            "PosixPath": path_class,
            "PurePath": pathlib.PurePosixPath,
            "PurePosixPath": pathlib.PurePosixPath,
        },
        "glob": {"glob": _paths(ops.glob), "escape": __import__("glob").escape},
        "shutil": {
            "copy": _paths(ops.copy, 2),
            "copyfile": _paths(ops.copyfile, 2),
            "copy2": _paths(ops.copy, 2),
            "move": _paths(ops.move, 2),
            "rmtree": _paths(ops.rmtree),
            "disk_usage": disk_usage,
        },
        "tempfile": {
            "TemporaryDirectory": temporary_directory,
            "mkdtemp": lambda suffix="", prefix="tmp", dir=None: ops.mkdtemp(
                suffix, prefix, None if dir is None else _text(dir)
            ),
        },
    }
