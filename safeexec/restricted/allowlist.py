"""What a reviewer signs off: the attribute names, dunders, modules and builtins sandboxed code
may use. Data only; the guards and the transformer enforce it."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping

from safeexec.restricted.derived_views import golden_views

# Attribute names the data-stack views (data_views.py) refuse or confine on numpy, pandas and
# matplotlib objects: raw pointers, pickle, string-expression evaluation, clipboard and foreign
# file formats, backend loading, paths that must go through the workdir, and methods that take a
# function *name* (``df.apply("to_pickle", ...)`` resolves it with the library's own getattr).
# On any other object a read of one of these names is the plain read it would have been.
MEDIATED_ATTRIBUTES = frozenset(
    {
        "ctypes",
        "cffi",
        "tofile",
        "dump",
        "dumps",
        "to_pickle",
        "eval",
        "query",
        "style",
        "to_clipboard",
        "to_sql",
        "to_hdf",
        "to_parquet",
        "to_feather",
        "to_orc",
        "to_stata",
        "to_excel",
        "to_gbq",
        "to_iceberg",
        "to_csv",
        "to_json",
        "to_html",
        "to_string",
        "to_markdown",
        "to_latex",
        "to_xml",
        "apply",
        "agg",
        "aggregate",
        "transform",
        "pivot_table",
        "plot",
        "hist",
        "boxplot",
        "savefig",
        "switch_backends",
        "print_figure",
        "print_png",
        "print_svg",
        "print_svgz",
        "print_pdf",
        "print_ps",
        "print_eps",
        "print_jpg",
        "print_jpeg",
        "print_tif",
        "print_tiff",
        "print_webp",
        "print_raw",
        "print_rgba",
        "print_pgf",
        "set_usetex",
        "set_file",
        # ``CategoricalDtype.type`` is a metaclass; on other data objects a plain class.
        "type",
    }
)

# Public-looking attribute names that lead somewhere dangerous on objects the code did not create:
# string formatting walks attributes; frames, code objects and tracebacks lead to globals.
DENIED_ATTRIBUTES = frozenset(
    {
        "format",
        "format_map",
        "vformat",
        "get_field",
        "get_value",
        "mro",
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "cr_frame",
        "cr_code",
        "cr_await",
        "cr_origin",
        "ag_frame",
        "ag_code",
        "ag_await",
        "tb_frame",
        "tb_next",
        "f_back",
        "f_builtins",
        "f_code",
        "f_generator",
        "f_globals",
        "f_locals",
        "f_trace",
        "co_code",
        "func_globals",
        "func_code",
        # A Cython function's own ``__dict__`` (numpy.random's functions): a host dict.
        "func_dict",
        "im_func",
        "im_self",
        "attrgetter",
        "methodcaller",
        # Property internals: a library property's setter is host code that writes to whatever
        # it is handed (``csv.DictReader.fieldnames.fset(host_class, ...)``).
        "fget",
        "fset",
        "fdel",
        # ``AttributeError.obj`` is whatever host code was looking at when it failed.
        "obj",
        # ``ABCMeta.register`` changes a library ABC's registry for the whole process
        # (``collections.abc.Mapping.register(list)``); own classes may still register.
        "register",
        # ``ZipInfo.from_file(path)`` stats any host path (its size, times and mode).
        "from_file",
        # ``PurePath.parser`` (Python 3.13) is the real ``posixpath`` module, and through it ``os``.
        "parser",
        # Read through the guard too, so the data-stack views decide on them (see below).
        *MEDIATED_ATTRIBUTES,
    }
)

# Dunder methods the code may define on its own classes and call on its own objects.
USER_DUNDERS = frozenset(
    {
        "__init__",
        "__post_init__",
        "__repr__",
        "__str__",
        "__format__",
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__hash__",
        "__bool__",
        "__len__",
        "__iter__",
        "__next__",
        "__reversed__",
        "__contains__",
        "__getitem__",
        "__setitem__",
        "__delitem__",
        "__missing__",
        "__enter__",
        "__exit__",
        "__call__",
        # Async context managers and iterators (the event loop is the runtime's own).
        "__aenter__",
        "__aexit__",
        "__aiter__",
        "__anext__",
        "__neg__",
        "__pos__",
        "__abs__",
        "__invert__",
        "__round__",
        "__int__",
        "__float__",
        "__index__",
        "__complex__",
        *(
            f"__{prefix}{op}__"
            for op in (
                "add",
                "sub",
                "mul",
                "truediv",
                "floordiv",
                "mod",
                "pow",
                "matmul",
                "and",
                "or",
                "xor",
                "lshift",
                "rshift",
                "divmod",
            )
            for prefix in ("", "r", "i")
            if not (prefix == "i" and op == "divmod")
        ),
    }
)

# Class-body names (not methods) the code may bind in its own classes.
_CLASS_BODY_NAMES = frozenset({"__slots__", "__hash__"})
# Read-only metadata that is a plain string on anything.
_ANYWHERE_DUNDERS = frozenset({"__name__", "__qualname__", "__doc__"})


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Module name → attribute allowlist. Values are vetted: no modules, no module-level mutable
# containers shared with the host (those are copied), nothing whose public attributes reach ``sys``.
# The pure stdlib modules' lists are derived from their public API minus a documented denylist and
# capped by the reviewed golden (derived_views.py); the rest are picked by hand here.
MODULE_ALLOWLISTS: Mapping[str, frozenset[str]] = {
    **golden_views(),
    "io": frozenset({"StringIO", "BytesIO"}),
    "__future__": _names("annotations"),
    # Views the runtime builds itself (workdir_views.py, environment_views.py): not the real
    # modules; every file-system call resolves beneath the workdir and never follows a link.
    "os": _names(
        "sep linesep curdir pardir name environ getenv getcwd cpu_count listdir walk stat mkdir "
        "makedirs remove unlink rmdir rename replace path"
    ),
    "os.path": _names(
        "join basename dirname split splitext normpath isabs commonprefix commonpath sep exists "
        "isfile isdir getsize getmtime abspath relpath"
    ),
    "pathlib": _names("Path PosixPath PurePath PurePosixPath"),
    "glob": _names("glob escape"),
    "shutil": _names("copy copyfile copy2 move rmtree disk_usage make_archive unpack_archive"),
    "tempfile": _names("TemporaryDirectory mkdtemp"),
    "sys": _names(
        "version version_info hexversion platform byteorder maxsize maxunicode float_info "
        "int_info path argv stdout stderr getsizeof getrecursionlimit getdefaultencoding "
        "getfilesystemencoding"
    ),
    "platform": _names("python_version python_implementation system machine"),
    "locale": _names("getpreferredencoding getencoding"),
    "traceback": _names("format_exc print_exc format_exception format_exception_only"),
    # Databases and archives whose files go through the workdir layer (sqlite_views.py,
    # archive_views.py): the libraries never open a path themselves.
    "sqlite3": _names(
        "connect Connection Cursor Row PARSE_DECLTYPES PARSE_COLNAMES complete_statement "
        "sqlite_version sqlite_version_info paramstyle apilevel Warning Error InterfaceError "
        "DatabaseError DataError OperationalError IntegrityError InternalError ProgrammingError "
        "NotSupportedError"
    ),
    "gzip": _names("open GzipFile compress decompress BadGzipFile"),
    "bz2": _names("open BZ2File compress decompress BZ2Compressor BZ2Decompressor"),
    "lzma": _names(
        "open LZMAFile compress decompress LZMACompressor LZMADecompressor LZMAError "
        "is_check_supported FORMAT_AUTO FORMAT_XZ FORMAT_ALONE FORMAT_RAW CHECK_NONE CHECK_CRC32 "
        "CHECK_CRC64 CHECK_SHA256 PRESET_DEFAULT PRESET_EXTREME FILTER_LZMA1 FILTER_LZMA2 "
        "FILTER_DELTA FILTER_X86"
    ),
    "zipfile": _names(
        "ZipFile ZipInfo is_zipfile BadZipFile BadZipfile LargeZipFile ZIP_STORED ZIP_DEFLATED "
        "ZIP_BZIP2 ZIP_LZMA"
    ),
    "tarfile": _names(
        "open TarInfo is_tarfile TarError ReadError CompressionError StreamError ExtractError "
        "HeaderError FilterError AbsolutePathError OutsideDestinationError SpecialFileError "
        "AbsoluteLinkError LinkOutsideDestinationError REGTYPE AREGTYPE DIRTYPE SYMTYPE LNKTYPE "
        "CHRTYPE BLKTYPE FIFOTYPE CONTTYPE USTAR_FORMAT GNU_FORMAT PAX_FORMAT DEFAULT_FORMAT "
        "ENCODING"
    ),
    # Views of threads that belong to their cell (concurrency_views.py): every wait is sliced and
    # ends when the cell is stopped. Left out: settrace, setprofile, excepthook, stack_size,
    # Barrier, Timer, ProcessPoolExecutor.
    "threading": _names(
        "Thread Lock RLock Condition Semaphore BoundedSemaphore Event current_thread "
        "main_thread active_count enumerate get_ident get_native_id TIMEOUT_MAX ThreadError"
    ),
    "queue": _names("Queue LifoQueue PriorityQueue SimpleQueue Empty Full"),
    "concurrent": frozenset({"futures"}),
    # Loggers, handlers and formatters of the executor's own (logging_view.py).
    "logging": _names(
        "CRITICAL ERROR WARNING WARN INFO DEBUG NOTSET FATAL getLogger basicConfig getLevelName "
        "disable Logger Handler StreamHandler FileHandler NullHandler Formatter LogRecord root "
        "debug info warning error critical exception log"
    ),
    # Filters and catching per executor, never the process's (warnings_view.py).
    "warnings": _names(
        "warn simplefilter filterwarnings resetwarnings catch_warnings WarningMessage"
    ),
    "concurrent.futures": _names(
        "ThreadPoolExecutor Future as_completed wait FIRST_COMPLETED FIRST_EXCEPTION "
        "ALL_COMPLETED TimeoutError CancelledError"
    ),
    # -- asyncio (asyncio_view.py): the runtime's own deterministic loop, never asyncio's ------
    "asyncio": _names(
        "run sleep gather create_task ensure_future current_task all_tasks wait_for wait "
        "as_completed shield timeout timeout_at Timeout to_thread TaskGroup get_event_loop "
        "get_running_loop new_event_loop set_event_loop iscoroutine iscoroutinefunction Future "
        "Task AbstractEventLoop Queue LifoQueue PriorityQueue QueueEmpty QueueFull Lock Event "
        "Condition Semaphore BoundedSemaphore TimeoutError CancelledError InvalidStateError "
        "FIRST_COMPLETED FIRST_EXCEPTION ALL_COMPLETED"
    ),
    # -- end asyncio ----------------------------------------------------------------------------
}

# The views above the runtime builds (the real module is never imported for them); those that
# touch files exist only where the executor has a workdir.
BUILT_VIEWS = frozenset(
    {
        "asyncio",
        "os",
        "os.path",
        "pathlib",
        "glob",
        "shutil",
        "tempfile",
        "sys",
        "platform",
        "locale",
        "traceback",
        "sqlite3",
        "gzip",
        "bz2",
        "lzma",
        "zipfile",
        "tarfile",
        "threading",
        "queue",
        "concurrent",
        "concurrent.futures",
        "warnings",
        "logging",
    }
)

# Views of the data stack (views/data_views.py: the real modules' public API minus a documented
# denylist), not in MODULE_ALLOWLISTS: through their thousands of C-level entry points an escape
# in the host process would be a host compromise.
DATA_VIEWS = frozenset(
    {
        "numpy",
        "numpy.linalg",
        "numpy.random",
        "numpy.fft",
        "pandas",
        "matplotlib",
        "matplotlib.pyplot",
    }
)

# Every view the runtime builds (``safeexec.restricted.views``) exists only where the restricted
# runtime runs inside the confined worker, whose kernel layers stand behind the guards: they do
# file I/O, start threads, or wrap sqlite3, archives, compression, logging handlers, asyncio or
# the data stack. In the host process (``restricted-inprocess``) the runtime is the core and the
# pure stdlib modules, and the gate says so (one list for both: :func:`has_view`).
WORKER_ONLY_VIEWS = BUILT_VIEWS | DATA_VIEWS

# Attributes of built views whose value is a factory, called on every read (mutable values,
# never shared: a fresh list each time for ``sys.path``).
FRESH_VALUES = frozenset({"sys.path", "sys.argv"})

# Modules that allowed modules import lazily from C on first use (``datetime.strptime`` imports
# ``_strptime``), mapped to the allowed modules that need them. C's ``PyImport_Import`` calls the
# code's ``__import__`` hook and then takes the module from ``sys.modules``, ignoring what the
# hook returns: the runtime imports the real module and hands the caller an empty view, so the
# sandboxed code never holds it even when it writes ``import _strptime`` itself.
LAZY_INTERNAL_IMPORTS: Mapping[str, frozenset[str]] = {
    "_strptime": frozenset({"datetime", "time"}),
}

_SAFE_BUILTIN_NAMES = _names(
    "abs aiter all anext any ascii bin bool bytearray bytes callable chr classmethod complex dict "
    "divmod enumerate filter float format frozenset hash hex id int isinstance issubclass iter len "
    "list map max min next object oct ord pow property range repr reversed round set slice sorted "
    "staticmethod str sum super tuple zip True False None NotImplemented Ellipsis "
)

_BUILTIN_EXCEPTIONS: Mapping[str, type[BaseException]] = {
    name: value
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}

# Where the code of an allowlisted module really lives (its private implementation modules):
# functions from these homes run on sandboxed code's behalf and are vetted with the module.
IMPLEMENTATION_MODULES: Mapping[str, frozenset[str]] = {
    "json": frozenset({"_json"}),
    # From Python 3.13 a dataclass's generated __repr__ is wrapped by reprlib.recursive_repr.
    "dataclasses": frozenset({"reprlib"}),
    "os.path": frozenset({"posixpath", "genericpath"}),
}


def module_matches(module: str, patterns: Iterable[str]) -> bool:
    """``*`` matches every module; ``a.*`` matches ``a`` and its submodules; ``a`` only ``a``.

    The one matcher of import patterns: the static gate and the restricted runtime both use it,
    so they cannot read a pack's ``[imports]`` differently.
    """
    for pattern in patterns:
        if pattern == "*" or pattern == module:
            return True
        if pattern.endswith(".*"):
            stem = pattern[:-2]
            if module == stem or module.startswith(stem + "."):
                return True
    return False


def has_view(module: str, *, in_process: bool = False) -> bool:
    """Whether restricted mode has a view of ``module``: in the confined worker, or in the host
    process (``in_process``), where only the pure stdlib modules have one."""
    if in_process:
        return module in MODULE_ALLOWLISTS and module not in WORKER_ONLY_VIEWS
    return module in MODULE_ALLOWLISTS or module in WORKER_ONLY_VIEWS


def restricted_modules(allow: Iterable[str], *, in_process: bool = False) -> tuple[str, ...]:
    """The modules restricted mode can import under the allowlist ``allow``: those it covers
    that have a module view (in the host process when ``in_process``). The gate's restricted
    allowlist and the runtime's imports are both this set."""
    patterns = tuple(allow)
    names = {*MODULE_ALLOWLISTS, *WORKER_ONLY_VIEWS}
    return tuple(
        sorted(
            name
            for name in names
            if has_view(name, in_process=in_process) and module_matches(name, patterns)
        )
    )
