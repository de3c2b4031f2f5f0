"""Views of numpy, pandas and matplotlib for restricted code, in the confined worker only.

Design (issue 11), decided on security grounds:

* **Where.** The data stack has views only where the restricted runtime runs inside the confined
  worker (``RestrictedExecutor(views=WorkerViews)``), with namespaces, Landlock, seccomp and rlimits
  behind the guards. numpy, pandas and matplotlib are thousands of public callables written in C
  and Python that take paths, URLs, raw pointers, pickles, string expressions and backend names;
  no bounded crawl proves such a surface closed, and in the host process (``restricted-inprocess``,
  the host's uid, no kernel layer) one miss is a host compromise. There the modules have no view
  and the gate refuses the import with the same list (:func:`~.allowlist.has_view`), so ``check``
  and ``run`` agree; the remedy says to run in the worker.
* **What.** Each view is the real module's public API minus a documented denylist (below) and
  minus every submodule (a module attribute is never handed out: numpy's and pyplot's submodules
  hold ``sys``, ``os``, ``subprocess``); the submodules models use (``numpy.linalg``,
  ``numpy.random``, ``numpy.fft``, ``matplotlib.pyplot``) are views of their own.
* **Files.** Every path argument goes through the workdir file layer (``Workdir``: ``BoundPath``
  beneath the workdir, no link followed): readers get the file's bytes in memory, writers render
  to memory and the bytes are written through the layer. The library never sees a path, so
  ``storage_options``, ``fsspec`` and URL fetching cannot run; a URL (``http://``, ``s3://``,
  ``file:``...) is refused by name. A buffer the code holds (``io.BytesIO``, a file from
  ``open``) is passed as it is.
* **Objects.** Attribute names that are dangerous on data-stack objects (``MEDIATED_ATTRIBUTES``
  in allowlist.py) compile to the guard, which asks :func:`mediate`: raw pointers
  (``ndarray.ctypes``, a bit generator's ``ctypes``/``cffi``), pickles (``tofile``, ``dump``,
  ``to_pickle``), string expressions (``eval``, ``query``: pandas' evaluator resolves ``@`` locals
  and attributes with its own getattr), templates (``style``: a jinja2 environment), clipboard,
  SQL and foreign file formats, canvases' ``print_*`` paths, ``set_usetex`` (a LaTeX subprocess)
  and font files are refused; ``to_csv``/``to_json``/``to_html``... and ``savefig`` write
  through the workdir; ``apply``/``agg``/``transform``/``pivot_table`` refuse a function *name*
  that names something a plain read would refuse (pandas resolves ``df.apply("to_pickle")`` with
  its own getattr, then on numpy); pandas' ``plot``/``hist``/``boxplot`` refuse ``backend=``
  (it imports a module by name).
* **matplotlib.** The worker already runs Agg and saves every figure left open as a PNG
  artifact after the cell (``worker._save_figures``), as in native mode; ``matplotlib.use``
  accepts only Agg (a no-op), and rcParams, styles, backends and image files are absent.
"""

from __future__ import annotations

import io
import os
import posixpath
import re
import types
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from safeexec.restricted.allowlist import DATA_VIEWS, DENIED_ATTRIBUTES
from safeexec.restricted.class_facts import (
    is_class,
    is_instance,
    is_metaclass,
    module_of,
    mro,
    super_self_class,
)
from safeexec.restricted.guards import (
    _ALIASES,
    CLASS_LIKE,
    GuardError,
    RuntimeClass,
    _view_value,
)
from safeexec.restricted.views.workdir_views import WorkdirPath

if TYPE_CHECKING:
    from safeexec.restricted.cell import Cell
    from safeexec.restricted.workdir_files import WorkdirOps

__all__ = [
    "DATA_DENIED",
    "DATA_ROOTS",
    "data_attributes",
    "is_data_object",
    "is_internal_module",
    "mediate",
]

DATA_ROOTS = frozenset({"numpy", "pandas", "matplotlib"})

# Module-level names absent from each view, by reason (a submodule view without its own entry
# takes its package's). Submodules are always absent.
DATA_DENIED: Mapping[str, frozenset[str]] = {
    "numpy": frozenset(
        {
            # raw memory, foreign code, the build and test machinery
            "ctypeslib",
            "lib",
            "f2py",
            "distutils",
            "testing",
            "from_dlpack",
            "get_include",
            "show_config",
            "show_runtime",
            "info",
            "memmap",
            "test",
            # files by path, or pickles (the view's load/save/loadtxt/savetxt/genfromtxt go
            # through the workdir)
            "fromfile",
            "fromregex",
            "savez",
            "savez_compressed",
            "DataSource",
            "tofile",
        }
    ),
    "pandas": frozenset(
        {
            # code from strings, pickles, process-wide options, foreign formats and the network
            "eval",
            "read_pickle",
            "to_pickle",
            "read_clipboard",
            "read_excel",
            "read_feather",
            "read_hdf",
            "read_html",
            "read_iceberg",
            "read_orc",
            "read_parquet",
            "read_sas",
            "read_spss",
            "read_sql",
            "read_sql_query",
            "read_sql_table",
            "read_stata",
            "read_xml",
            "ExcelFile",
            "ExcelWriter",
            "HDFStore",
            "options",
            "set_option",
            "reset_option",
            "option_context",
            "describe_option",
            "get_option",
            "set_eng_float_format",
            "show_versions",
            "test",
        }
    ),
    "matplotlib.pyplot": frozenset(
        {
            # backends, process-wide settings, image files by path
            "switch_backend",
            "new_figure_manager",
            "install_repl_displayhook",
            "uninstall_repl_displayhook",
            "rc",
            "rc_context",
            "rcdefaults",
            "rc_file",
            "rc_file_defaults",
            "rcParams",
            "rcParamsDefault",
            "rcParamsOrig",
            "xkcd",
            "imread",
            "imsave",
            "savefig",
        }
    ),
}
_NUMPY_FILES = ("load", "save", "loadtxt", "savetxt", "genfromtxt")
_PANDAS_READERS = {
    "read_csv": "filepath_or_buffer",
    "read_table": "filepath_or_buffer",
    "read_fwf": "filepath_or_buffer",
    "read_json": "path_or_buf",
}
_WRITERS = {
    "to_csv": "path_or_buf",
    "to_json": "path_or_buf",
    "to_html": "buf",
    "to_string": "buf",
    "to_markdown": "buf",
    "to_latex": "buf",
    "to_xml": "path_or_buffer",
}
_NAMED_FUNCTIONS = frozenset({"apply", "agg", "aggregate", "transform", "pivot_table"})
_PLOTTING = frozenset({"plot", "hist", "boxplot"})
_REFUSED = {
    "ctypes": "raw pointers",
    "cffi": "raw pointers",
    "tofile": "files by path (use np.save or open())",
    "dump": "pickles",
    "dumps": "pickles",
    "to_pickle": "pickles",
    "eval": "string expressions (write the Python expression itself)",
    "query": "string expressions (use a boolean mask: df[df['a'] > 1])",
    "style": "templates (jinja2)",
    "to_clipboard": "the clipboard (a subprocess)",
    "to_sql": "databases by URL",
    "to_hdf": "a foreign file format",
    "to_parquet": "a foreign file format",
    "to_feather": "a foreign file format",
    "to_orc": "a foreign file format",
    "to_stata": "a foreign file format",
    "to_excel": "a foreign file format",
    "to_gbq": "the network",
    "to_iceberg": "a foreign file format",
    "switch_backends": "backends",
    "set_usetex": "a LaTeX subprocess",
    "set_file": "font files by path",
}
_COMPRESSION = {".gz": "gzip", ".bz2": "bz2", ".zip": "zip", ".xz": "xz", ".zst": "zstd"}
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_data_types: dict[type, bool] = {}


def is_internal_module(name: str) -> bool:
    """Is ``name`` a private implementation module of the data stack (``numpy._core._methods``)?
    Their C code imports these lazily through the caller's ``__import__``; the runtime imports
    them for it and hands the caller an empty view (see ``LAZY_INTERNAL_IMPORTS``)."""
    parts = name.split(".")
    return parts[0] in DATA_ROOTS and any(p.startswith("_") for p in parts[1:])


def is_data_object(obj: object) -> bool:
    """Is ``obj`` (or the class it is, or a ``super`` of it) from numpy, pandas or matplotlib?
    An own subclass of a library class counts: it inherits the library's methods."""
    if is_instance(obj, super):
        obj = super_self_class(obj)
    elif is_instance(obj, _ALIASES):
        obj = obj.__origin__  # type: ignore[attr-defined]
    kind: type = obj if is_class(obj) else type(obj)
    known = _data_types.get(kind)
    if known is None:
        known = any(_module_of(base).split(".")[0] in DATA_ROOTS for base in mro(kind))
        _data_types[kind] = known
    return known


def mediate(cell: Cell, obj: object, name: str) -> object:
    """What reading the mediated attribute ``name`` of ``obj`` gives restricted code."""
    guards = cell.guards
    if not is_data_object(obj):
        return guards.plain_read(obj, name)
    if is_instance(obj, CLASS_LIKE):
        raise GuardError(
            f"{name!r} of a numpy, pandas or matplotlib class is not available in restricted "
            "mode; call it on an instance"
        )
    reason = "files by path (use savefig)" if name.startswith("print_") else _REFUSED.get(name)
    if reason is not None:
        raise GuardError(
            f"{type(obj).__name__}.{name} is not available in restricted mode: it reaches {reason}"
        )
    value = getattr(obj, name)
    if name == "type" and is_metaclass(value):
        raise GuardError(f"{type(obj).__name__}.type is a metaclass (it builds classes)")
    pandas = _root(obj) == "pandas"
    files = cell.files
    if name in _WRITERS and pandas and files is not None:
        return _writer(files, value, name)
    if name in _NAMED_FUNCTIONS and pandas:
        return _named_functions(value, name)
    if name in _PLOTTING and pandas:
        return _PlotView(value) if not isinstance(value, types.MethodType) else _no_backend(value)
    if name == "savefig" and files is not None:
        return lambda *args, **kwargs: _savefig(files, value, *args, **kwargs)
    if name in _WRITERS or name == "savefig":
        raise GuardError(f"{name} needs a working directory in restricted mode")
    return value


def _module_of(kind: type) -> str:
    """A class's module as the type itself records it (C types keep it in their name; a
    metaclass cannot override this read)."""
    return str(module_of(kind))


def _root(obj: object) -> str:
    for base in mro(type(obj)):
        root = _module_of(base).split(".")[0]
        if root in DATA_ROOTS:
            return root
    return ""


# -- paths ------------------------------------------------------------------------------------
def _path(target: object, caller: str) -> str | None:
    """The workdir path ``target`` names, or ``None`` for a buffer the code holds."""
    if isinstance(target, WorkdirPath):
        target = str(target)
    elif isinstance(target, os.PathLike):
        target = os.fspath(target)
    if isinstance(target, bytes):
        raise TypeError(f"{caller}(): the path must be a string")
    if not isinstance(target, str):
        return None
    if "://" in target or _URL.match(target):
        raise GuardError(
            f"{caller}(): {target!r} is a URL; restricted mode reads and writes "
            "files in the working directory only (a granted tool fetches URLs)"
        )
    return target


def _read(files: WorkdirOps, path: str, caller: str) -> io.BytesIO:
    return io.BytesIO(files.apply(path, caller, lambda p: p.read_bytes()))


def _write(files: WorkdirOps, path: str, data: bytes, *, append: bool = False) -> None:
    with files.open(path, "ab" if append else "wb") as handle:
        handle.write(data)


def _compression(path: str, kwargs: dict[str, Any]) -> None:
    """The compression pandas would infer from ``path``'s name (it cannot from a buffer)."""
    if kwargs.get("compression", "infer") == "infer":
        kwargs["compression"] = _COMPRESSION.get(posixpath.splitext(path)[1].lower())


def _argument(args: tuple[Any, ...], kwargs: dict[str, Any], keyword: str) -> tuple[Any, bool]:
    if args:
        return args[0], True
    return kwargs.get(keyword), False


def _replace(
    args: tuple[Any, ...], kwargs: dict[str, Any], keyword: str, positional: bool, value: object
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if positional:
        return (value, *args[1:]), kwargs
    return args, {**kwargs, keyword: value}


def _refuse_remote(kwargs: Mapping[str, object], caller: str) -> None:
    if kwargs.get("storage_options") is not None:
        raise GuardError(f"{caller}(): storage_options (remote file systems) is not available")


# -- pandas -----------------------------------------------------------------------------------
def _reader(files: WorkdirOps | None, read: Callable[..., Any], name: str) -> Callable[..., Any]:
    keyword = _PANDAS_READERS[name]

    def reader(*args: Any, **kwargs: Any) -> Any:
        _refuse_remote(kwargs, name)
        target, positional = _argument(args, kwargs, keyword)
        path = _path(target, name)
        if path is not None:
            if files is None:
                raise GuardError(f"{name}() needs a working directory in restricted mode")
            _compression(path, kwargs)
            args, kwargs = _replace(args, kwargs, keyword, positional, _read(files, path, name))
        return read(*args, **kwargs)

    reader.__name__ = reader.__qualname__ = name
    reader.__doc__ = read.__doc__
    return reader


def _writer(files: WorkdirOps, write: Callable[..., Any], name: str) -> Callable[..., Any]:
    keyword = _WRITERS[name]

    def writer(*args: Any, **kwargs: Any) -> Any:
        _refuse_remote(kwargs, name)
        target, positional = _argument(args, kwargs, keyword)
        path = _path(target, name)
        if path is None:
            return write(*args, **kwargs)
        append = str(kwargs.get("mode", "w")).startswith("a")
        if name == "to_csv":
            _compression(path, kwargs)
            kwargs.pop("mode", None)
            buffer = io.BytesIO()
            into_args, into_kwargs = _replace(args, kwargs, keyword, positional, buffer)
            write(*into_args, **into_kwargs)
            data = buffer.getvalue()
        else:
            kwargs.pop("mode", None)
            rest_args, rest_kwargs = _replace(args, kwargs, keyword, positional, None)
            text = write(*rest_args, **rest_kwargs)
            encoding = rest_kwargs.get("encoding") or "utf-8"
            data = str(text).encode(encoding)
        _write(files, path, data, append=append)
        return None

    writer.__name__ = writer.__qualname__ = name
    writer.__doc__ = getattr(write, "__doc__", None)
    return writer


def _check_function_names(value: object, caller: str) -> None:
    """Refuse a function given by name that names what a plain read would refuse: pandas
    resolves it with its own getattr on the object, then on numpy."""
    if isinstance(value, str):
        numpy_denied = DATA_DENIED["numpy"]
        guarded = value in DENIED_ATTRIBUTES and value != "type"  # a common column name
        if value.startswith("_") or guarded or value in numpy_denied:
            raise GuardError(f"{caller}(): the function name {value!r} is not allowed")
    elif isinstance(value, list | tuple):
        for item in value:
            _check_function_names(item, caller)
    elif isinstance(value, dict):
        for item in value.values():
            _check_function_names(item, caller)


def _named_functions(method: Callable[..., Any], name: str) -> Callable[..., Any]:
    def checked(*args: Any, **kwargs: Any) -> Any:
        for value in (*args, *kwargs.values()):
            _check_function_names(value, name)
        return method(*args, **kwargs)

    checked.__name__ = checked.__qualname__ = name
    checked.__doc__ = getattr(method, "__doc__", None)
    return checked


def _no_backend(method: Callable[..., Any]) -> Callable[..., Any]:
    def plot(*args: Any, **kwargs: Any) -> Any:
        if "backend" in kwargs:
            raise GuardError("plotting backend= imports a module by name; the worker uses Agg")
        return method(*args, **kwargs)

    plot.__name__ = plot.__qualname__ = getattr(method, "__name__", "plot")
    plot.__doc__ = getattr(method, "__doc__", None)
    return plot


class _PlotView(metaclass=RuntimeClass):
    """``df.plot``: call it or its kinds (``df.plot.bar``), never with ``backend=``."""

    __slots__ = ("_accessor",)
    _accessor: Callable[..., Any]

    def __init__(self, accessor: Callable[..., Any]) -> None:
        object.__setattr__(self, "_accessor", accessor)

    def __setattr__(self, name: str, value: object) -> None:
        raise GuardError("plot accessors are read-only in restricted mode")

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("runtime objects cannot be pickled or copied in restricted mode")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _no_backend(self._accessor)(*args, **kwargs)

    def __getattr__(self, name: str) -> object:
        if name.startswith("_"):
            raise AttributeError(name)
        return _no_backend(getattr(self._accessor, name))


# -- numpy ------------------------------------------------------------------------------------
def _numpy_files(files: WorkdirOps | None, numpy: Any) -> dict[str, object]:
    def need() -> WorkdirOps:
        if files is None:
            raise GuardError("numpy file functions need a working directory in restricted mode")
        return files

    def load(
        file: object, mmap_mode: object = None, allow_pickle: bool = False, **kwargs: Any
    ) -> Any:
        if allow_pickle or mmap_mode is not None:
            raise GuardError("np.load(): allow_pickle and mmap_mode are not available")
        path = _path(file, "load")
        source = file if path is None else _read(need(), path, "load")
        return numpy.load(source, allow_pickle=False, **kwargs)

    def save(file: object, arr: object, allow_pickle: bool = False, **kwargs: Any) -> None:
        if allow_pickle:
            raise GuardError("np.save(): allow_pickle is not available")
        path = _path(file, "save")
        if path is None:
            numpy.save(file, arr, allow_pickle=False, **kwargs)
            return
        buffer = io.BytesIO()
        numpy.save(buffer, arr, allow_pickle=False, **kwargs)
        _write(need(), path if path.endswith(".npy") else path + ".npy", buffer.getvalue())

    def text_reader(function: Callable[..., Any], name: str) -> Callable[..., Any]:
        def read(fname: object, *args: Any, **kwargs: Any) -> Any:
            path = _path(fname, name)
            source = fname if path is None else _read(need(), path, name)
            return function(source, *args, **kwargs)

        read.__name__ = read.__qualname__ = name
        return read

    def savetxt(fname: object, X: object, *args: Any, **kwargs: Any) -> None:
        path = _path(fname, "savetxt")
        if path is None:
            numpy.savetxt(fname, X, *args, **kwargs)
            return
        buffer = io.BytesIO()
        numpy.savetxt(buffer, X, *args, **kwargs)
        _write(need(), path, buffer.getvalue())

    return {
        "load": load,
        "save": save,
        "loadtxt": text_reader(numpy.loadtxt, "loadtxt"),
        "genfromtxt": text_reader(numpy.genfromtxt, "genfromtxt"),
        "savetxt": savetxt,
    }


# -- matplotlib -------------------------------------------------------------------------------
def _savefig(
    files: WorkdirOps, save: Callable[..., Any], fname: object, *args: Any, **kwargs: Any
) -> None:
    """``savefig`` through the workdir: rendered to memory, written by the file layer."""
    if "backend" in kwargs:
        raise GuardError("savefig(backend=...) loads a backend by name; the worker uses Agg")
    path = _path(fname, "savefig")
    if path is None:
        save(fname, *args, **kwargs)
        return
    form = kwargs.pop("format", None)
    if form is None:
        extension = posixpath.splitext(path)[1][1:].lower()
        if not extension:
            path, extension = path + ".png", "png"
        form = extension
    buffer = io.BytesIO()
    save(buffer, *args, format=form, **kwargs)
    _write(files, path, buffer.getvalue())


def _use(backend: object, *, force: bool = True) -> None:
    """``matplotlib.use``: the worker runs Agg; another backend would load a GUI toolkit."""
    if not isinstance(backend, str) or backend.lower() != "agg":
        raise GuardError(f"matplotlib.use({backend!r}): only the Agg backend runs in the sandbox")


# -- the views --------------------------------------------------------------------------------
def _public(module: types.ModuleType, denied: Iterable[str]) -> dict[str, object]:
    skip = set(denied)
    attributes: dict[str, object] = {}
    for name in dir(module):
        if name.startswith("_") or name in skip:
            continue
        try:
            value = getattr(module, name)
        except Exception:
            continue
        if isinstance(value, types.ModuleType) or not _own_export(value):
            continue
        attributes[name] = _view_value(value)  # module-level containers are copies
    return attributes


def _own_export(value: object) -> bool:
    """Is ``value`` the data stack's own (or plain data), not a re-exported helper of another
    library (pyplot re-exports ``contextlib.ExitStack`` and ``typing.overload``)?"""
    if not callable(value) and type(value).__module__ in ("builtins", "numpy"):
        return True
    module = getattr(value, "__module__", None)
    if not isinstance(module, str):
        module = _module_of(type(value))
    return module.split(".")[0] in DATA_ROOTS


def data_attributes(cell: Cell, name: str) -> dict[str, object]:
    """The attributes of the view of data-stack module ``name`` (one of ``DATA_VIEWS``; the
    executor adds its allowed submodules)."""
    import importlib

    assert name in DATA_VIEWS
    files = cell.files
    if name == "matplotlib":
        import matplotlib

        attributes: dict[str, object] = {"use": _use, "get_backend": matplotlib.get_backend}
    else:
        module = importlib.import_module(name)
        # numpy's submodules share its denylist (each has a ``test`` that runs pytest).
        attributes = _public(module, DATA_DENIED.get(name, DATA_DENIED.get(name.split(".")[0], ())))
        if name == "numpy":
            attributes.update(_numpy_files(files, module))
        elif name == "pandas":
            attributes.update({r: _reader(files, getattr(module, r), r) for r in _PANDAS_READERS})
        elif name == "matplotlib.pyplot":
            pyplot = module

            def savefig(*args: Any, **kwargs: Any) -> None:
                if files is None:
                    raise GuardError("savefig needs a working directory in restricted mode")
                _savefig(files, pyplot.gcf().savefig, *args, **kwargs)

            attributes["savefig"] = savefig
    return attributes
