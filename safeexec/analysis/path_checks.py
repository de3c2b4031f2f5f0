"""The path check: a constant file path that leaves the workdir (absolute, ``~``, ``..``, an fd).

A registered code check (see :mod:`safeexec.analysis.checks`, which holds the registry).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from safeexec.analysis.sites import CheckHit, ScanContext, clip_text

__all__ = ["path_outside_workdir"]

# Functions whose first argument is a file system path.
_PATH_FUNCTIONS = frozenset(
    {
        "open",
        "io.open",
        "io.open_code",
        "io.FileIO",
        "contextlib.chdir",
        "codecs.open",
        "os.open",
        "pathlib.Path",
        "pathlib.PurePath",
        "pathlib.PosixPath",
        "pathlib.PurePosixPath",
        "numpy.load",
        "numpy.loadtxt",
        "numpy.save",
        "numpy.savetxt",
        "pandas.read_csv",
        "pandas.read_json",
        "pandas.read_parquet",
        "pandas.read_excel",
        "matplotlib.pyplot.savefig",
    }
)


def _outside_workdir(path: str) -> bool:
    cleaned = path.replace("\\", "/")
    if cleaned.startswith(("/", "~")) or cleaned.startswith("file:"):
        return True
    if len(cleaned) > 1 and cleaned[1] == ":":
        return True
    return ".." in cleaned.split("/")


_PATH_CONSTRUCTORS = frozenset(
    {"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "pathlib.PurePosixPath"}
)
# File functions that also take an open file descriptor in place of a path.
_DESCRIPTOR_OPENERS = frozenset({"open", "io.open", "io.FileIO", "codecs.open"})
# Calls that return the home directory (what ``~`` means in a path).
_HOME_FUNCTIONS = frozenset({"pathlib.Path.home", "pathlib.PosixPath.home"})


def _spread_arguments(args: list[ast.expr]) -> list[ast.expr]:
    """Positional arguments with ``*[...]``/``*(...)`` literals spread out."""
    spread: list[ast.expr] = []
    for arg in args:
        if isinstance(arg, ast.Starred) and isinstance(arg.value, ast.List | ast.Tuple):
            spread.extend(arg.value.elts)
        else:
            spread.append(arg)
    return spread


def _spread_keywords(keywords: list[ast.keyword], name: str) -> list[ast.expr]:
    """The value of ``name`` given through a ``**{...}`` dict literal."""
    return [
        value
        for keyword in keywords
        if keyword.arg is None and isinstance(keyword.value, ast.Dict)
        for key, value in zip(keyword.value.keys, keyword.value.values, strict=True)
        if isinstance(key, ast.Constant) and key.value == name
    ]


def path_outside_workdir(ctx: ScanContext) -> Iterator[CheckHit]:
    """A file function given a constant path that is absolute, home-relative or climbs with `..`.

    Also ``Path(...) / "/etc"`` and ``.joinpath("/etc")``: an absolute part replaces the path.
    """
    for division in ctx.divisions:
        part = ctx.folder.fold(division.right)
        if part is not None and _outside_workdir(part):
            yield CheckHit(
                node=division,
                fields={"path": clip_text(part), "function": "pathlib.Path.__truediv__"},
                evidence=clip_text(part),
            )
    for site in ctx.calls:
        func = site.node.func
        if isinstance(func, ast.Attribute) and func.attr in ("joinpath", "with_name", "rename"):
            for arg in site.node.args:
                part = ctx.folder.fold(arg)
                if part is not None and _outside_workdir(part):
                    yield CheckHit(
                        node=site.node,
                        fields={"path": clip_text(part), "function": func.attr},
                        evidence=clip_text(part),
                    )
        if site.callee in _HOME_FUNCTIONS:
            yield CheckHit(
                node=site.node, fields={"path": "~", "function": site.callee}, evidence="~"
            )
            continue
        if site.callee not in _PATH_FUNCTIONS:
            continue
        args = _spread_arguments(site.node.args)
        # Every part of a pathlib constructor counts: an absolute later part replaces the path.
        candidates = [
            *(args if site.callee in _PATH_CONSTRUCTORS else args[:1]),
            *(k.value for k in site.node.keywords if k.arg == "file"),
            *_spread_keywords(site.node.keywords, "file"),
        ]
        for arg in candidates:
            path = ctx.folder.fold(arg)
            if (
                site.callee in _DESCRIPTOR_OPENERS
                and isinstance(arg, ast.Constant)
                and type(arg.value) is int
            ):
                path = f"file descriptor {arg.value}"  # an inherited descriptor: not a workdir file
                yield CheckHit(
                    node=site.node,
                    fields={"path": path, "function": site.callee},
                    evidence=path,
                )
            elif path is not None and _outside_workdir(path):
                yield CheckHit(
                    node=site.node,
                    fields={"path": clip_text(path), "function": site.callee},
                    evidence=clip_text(path),
                )
