"""What the reachability crawl tries (probe values, own-object snippets) and how it looks at
objects: identities, candidate attribute names, items, and the state of host objects."""

from __future__ import annotations

import builtins
import bz2
import contextlib
import gzip
import io
import lzma
import sqlite3
import sys
import tarfile
import types
import zipfile
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from safeexec.restricted.allowlist import DENIED_ATTRIBUTES

_FILENAME = "<reachability>"

# Strings a host helper might take as an attribute, module or field name.
PROBE_NAMES = (
    "__globals__",
    "__dict__",
    "__builtins__",
    "_convert_",
    "__class__",
    "__code__",
    "__closure__",
    "__wrapped__",
    "__subclasses__",
    "__bases__",
    "__mro__",
    "__base__",
    "__self__",
    "__func__",
    "__module__",
    "__init_subclass__",
    "__set_name__",
    "__reduce_ex__",
    "__getattribute__",
    "__traceback__",
    "__annotations__",
    "_member_map_",
    "_value2member_map_",
    "f_globals",
    "gi_frame",
    "tb_frame",
    "modules",
)
PROBE_MODULES = ("os", "sys", "builtins", "uuid", "__main__")
PROBE_TEMPLATES = (
    "{0.__class__}",
    "{0.__globals__}",
    "{0.__init__.__globals__[sys]}",
    "{0[__builtins__]}",
    "{__class__.__mro__}",
)
# Keyword names tried on callables that take ``**kwargs`` (helpers pass them through).
_PASS_THROUGH_KEYWORDS = (
    "updated",
    "assigned",
    "module",
    "globals",
    "globalns",
    "localns",
    "namespace",
    "include_extras",
    "boundary",
    "qualname",
    "type",
    "names",
)

# The pool entries tried as keyword values.
_KEYWORD_PROBES = frozenset(
    {"PROBE_NAMES", "list(PROBE_NAMES)", "'__globals__'", "'uuid'", "probe_function"}
)

# Restricted code that makes own objects, one kind per snippet (a kind whose module the
# allowlist lacks, or that the compiler refuses, cannot exist and is recorded as such).
OWN_KINDS: Mapping[str, str] = {
    "plain class": (
        "class Plain:\n    attr = 1\n    _private = 2\n"
        "    def method(self, *a, **k):\n        return a\n"
        "    def __repr__(self):\n        return 'Plain()'\n"
        "plain_class = Plain\nplain = Plain()\nplain._mine = 3\n"
    ),
    "dataclass": (
        "import dataclasses\n@dataclasses.dataclass\nclass Data:\n    x: int = 0\n"
        "    y: list = dataclasses.field(default_factory=list)\n"
        "dataclass_class = Data\ndataclass = Data()\n"
    ),
    "Enum": (
        "import enum\nclass Color(enum.Enum):\n    RED = 1\n    def describe(self, *a, **k):\n"
        "        return a\n    @classmethod\n    def pick(cls, *a, **k):\n        return cls.RED\n"
        "enum_class = Color\nenum = Color.RED\n"
    ),
    "class with descriptors": (
        "class Rich:\n    attr = 1\n    def method(self, *a, **k):\n        return a\n"
        "    @property\n    def prop(self):\n        return self.attr\n"
        "    @classmethod\n    def cmethod(cls, *a, **k):\n        return cls\n"
        "    @staticmethod\n    def smethod(*a, **k):\n        return a\n"
        "class RichChild(Rich):\n    pass\nrich_class = RichChild\nrich = RichChild()\n"
    ),
    "collections subclass": (
        "import collections\nclass MyCounter(collections.Counter):\n    pass\n"
        "class MyOrderedDict(collections.OrderedDict):\n    pass\n"
        "class MyDefaultDict(collections.defaultdict):\n    pass\n"
        "my_counter_class = MyCounter\nmy_counter = MyCounter('abc')\n"
        "my_ordered_class = MyOrderedDict\nmy_ordered = MyOrderedDict(a=1)\n"
        "my_default_class = MyDefaultDict\nmy_default = MyDefaultDict(list)\n"
    ),
    "dataclass subclass": (
        "import dataclasses\n@dataclasses.dataclass(frozen=True)\nclass Base:\n    x: int = 0\n"
        "    def method(self, *a, **k):\n        return a\n"
        "@dataclasses.dataclass(frozen=True, order=True)\nclass Child(Base):\n    y: int = 1\n"
        "dataclass_child_class = Child\ndataclass_child = Child()\n"
    ),
    "context managers": (
        "import contextlib\n@contextlib.contextmanager\ndef managed(*a, **k):\n    yield a\n"
        "class Closeable:\n    def close(self):\n        return None\n"
        "managed_function = managed\ncontext_manager = managed()\nentered_manager = managed()\n"
        "with entered_manager as entered:\n    pass\n"
        "decorated_function = managed()(lambda *a, **k: a)\n"
        "closing_manager = contextlib.closing(Closeable())\n"
        "suppress_manager = contextlib.suppress(KeyError)\n"
        "nullcontext_manager = contextlib.nullcontext(Closeable())\n"
        "exit_stack = contextlib.ExitStack()\n"
        "exit_stack.enter_context(contextlib.nullcontext())\n"
        "exit_stack.callback(lambda *a, **k: a)\n"
        "with contextlib.ExitStack() as used_stack:\n    used_stack.enter_context(managed())\n"
    ),
    "IntFlag": (
        "import enum\nclass Perm(enum.IntFlag):\n    R = 4\n    W = 2\n"
        "intflag_class = Perm\nintflag = Perm.R | Perm.W\n"
    ),
    "NamedTuple": (
        "import typing\nclass Point(typing.NamedTuple):\n    x: int = 0\n"
        "    def method(self, *a, **k):\n        return a\n"
        "namedtuple_class = Point\nnamedtuple = Point(1)\n"
    ),
    "collections.namedtuple": (
        "import collections\nPair = collections.namedtuple('Pair', 'a b')\n"
        "pair_class = Pair\npair = Pair(1, 2)\n"
    ),
    "TypedDict": (
        "import typing\nclass Movie(typing.TypedDict):\n    title: str\n"
        "typeddict_class = Movie\ntypeddict = Movie(title='x')\n"
    ),
    "ABC": (
        "import abc\nclass Shape(abc.ABC):\n    @abc.abstractmethod\n    def area(self):\n"
        "        pass\nclass Square(Shape):\n    def area(self):\n        return 1\n"
        "abc_class = Shape\nabc = Square()\n"
    ),
    "Exception subclass": (
        "class Oops(Exception):\n    code = 1\n    def method(self, *a, **k):\n        return a\n"
        "try:\n    raise Oops('x')\nexcept Oops as e:\n"
        "    exception = e\nexception_class = Oops\n"
    ),
    "generator": (
        "def gen():\n    yield 1\n    yield 2\ngenerator = gen()\nstarted_generator = gen()\n"
        "next(started_generator)\ngenerator_expression = (x for x in [1, 2])\n"
    ),
    "coroutine": "async def coro():\n    return 1\ncoroutine = coro()\n",
    "async generator": "async def agen():\n    yield 1\nasync_generator = agen()\n",
    "sqlite3 connection": (
        "import sqlite3\nsqlite_connection = sqlite3.connect('probe.db')\n"
        "sqlite_connection.execute('create table if not exists t(x)')\n"
        "sqlite_cursor = sqlite_connection.execute('select 1 as one')\n"
        "sqlite_connection.row_factory = sqlite3.Row\n"
        "sqlite_row = sqlite_connection.execute('select 1 as one').fetchone()\n"
    ),
    "compressed file": (
        "import gzip, bz2, lzma\ngzip_file = gzip.open('probe.gz', 'wt')\n"
        "bz2_file = bz2.open('probe.bz2', 'wb')\nlzma_file = lzma.open('probe.xz', 'wb')\n"
    ),
    "zip archive": (
        "import zipfile\nzip_archive = zipfile.ZipFile('probe.zip', 'w')\n"
        "zip_archive.writestr('member.txt', 'x')\nzip_archive.close()\n"
        "zip_reader = zipfile.ZipFile('probe.zip')\nzip_info = zip_reader.infolist()[0]\n"
        "zip_member = zip_reader.open('member.txt')\n"
    ),
    "tar archive": (
        "import io, tarfile\ntar_buffer = io.BytesIO()\n"
        "tar_archive = tarfile.open(fileobj=tar_buffer, mode='w:gz')\n"
        "tar_info = tarfile.TarInfo('member.txt')\ntar_info.size = 1\n"
        "tar_archive.addfile(tar_info, io.BytesIO(b'x'))\ntar_archive.close()\n"
        "tar_buffer.seek(0)\ntar_reader = tarfile.open(fileobj=tar_buffer)\n"
        "tar_member = tar_reader.extractfile('member.txt')\n"
    ),
    "typing aliases": (
        "import typing\nalias_type = typing.Type[int]\nalias_bare_type = typing.Type\n"
        "alias_list = typing.List[int]\nalias_callable = typing.Callable[[int], str]\n"
        "generic_alias = list[int]\n"
    ),
    "closure": (
        "def outer():\n    captured = [1]\n    def inner(*a, **k):\n        return captured\n"
        "    return inner\nclosure = outer()\nfunction = lambda *a, **k: a\n"
    ),
}

# The aliases (made by ``OWN_KINDS["typing aliases"]``) the probes pass as arguments.
_ALIAS_PROBES = ("alias_type", "alias_bare_type", "alias_list", "alias_callable", "generic_alias")

# Own objects the probes pass as arguments (made by restricted code, like everything else).
_PROBE_OBJECTS = (
    "def probe_function(*a, **k):\n    return a\n"
    "probe_true = lambda *a, **k: True\n"
    "probe_public = lambda n=None, *a, **k: type(n) is str and not n.startswith('_')\n"
    "class ProbeClass:\n    pass\n"
    "probe_instance = ProbeClass()\n"
)

# Classes that build functions or code, or open any path: holding one is a hole by itself.
_DANGEROUS_CLASSES = (
    types.CodeType,
    types.FrameType,
    types.TracebackType,
    types.ModuleType,
    io.FileIO,
    io.BufferedReader,
    io.BufferedWriter,
    io.BufferedRandom,
    io.BufferedRWPair,
    io.TextIOWrapper,
    # The library objects behind the database and archive views: their classes open any path,
    # their methods read, write and extract host files or replace the authorizer.
    sqlite3.Connection,
    sqlite3.Cursor,
    gzip.GzipFile,
    bz2.BZ2File,
    lzma.LZMAFile,
    zipfile.ZipFile,
    zipfile.ZipExtFile,
    tarfile.TarFile,
)
_SCALARS = (str, bytes, int, float, complex, bool, type(None), type(Ellipsis), range, slice)
# Plain data: only the items matter (their methods are the type's, explored through the type).
_DATA = (list, tuple, dict, set, frozenset, deque, bytearray, types.MappingProxyType)
_MUTABLE = (list, dict, set, deque, bytearray)
# Runtime modules whose functions sandboxed code legitimately holds (wrappers, guards, proxies).
_RUNTIME_HOMES = ("safeexec.restricted", "safeexec.capabilities.gateway")


@dataclass(slots=True)
class _Snapshot:
    """The state of a host object before the crawl (its attribute dict or its items)."""

    obj: object
    path: str
    items: tuple[tuple[object, object], ...]
    saved: object


_MISSING = object()


class _ProbeTimeout(BaseException):
    """A probe call ran past its deadline (a BaseException, so host code cannot swallow it)."""


def _identity(obj: object) -> object:
    """A key that is stable for bound methods (a new object on every attribute load)."""
    if isinstance(obj, types.MethodType):
        return ("method", id(obj.__self__), id(obj.__func__))
    if isinstance(obj, types.BuiltinMethodType) and not isinstance(
        getattr(obj, "__self__", None), types.ModuleType
    ):
        return ("builtin method", id(obj.__self__), obj.__name__)
    if isinstance(obj, types.MethodWrapperType):
        return ("method wrapper", id(obj.__self__), obj.__name__)
    return id(obj)


def _is_bound(obj: object) -> bool:
    if isinstance(obj, types.MethodType | types.MethodWrapperType):
        return True
    return isinstance(obj, types.BuiltinMethodType) and not isinstance(
        getattr(obj, "__self__", None), types.ModuleType
    )


def _behaviour(func: object) -> object:
    """What decides what a call does: a method's function and its receiver's type, a C method's
    defining class and name; probing one receiver of each is enough."""
    if isinstance(func, types.MethodType):
        return ("method", id(func.__func__), type(func.__self__))
    receiver = getattr(func, "__self__", None)
    if isinstance(func, types.BuiltinMethodType | types.MethodWrapperType) and not isinstance(
        receiver, types.ModuleType
    ):
        name = getattr(func, "__name__", "")
        owner = next((k for k in type(receiver).__mro__ if name in vars(k)), type(receiver))
        return ("builtin method", owner, name)
    return id(func)


def _candidate_names(obj: object) -> set[str]:
    """Every attribute name code could try: ``dir()`` of the object, its type and its
    metaclass, plus the keys of every ``__dict__`` along their MROs."""
    names: set[str] = set()
    kinds = [obj, type(obj), type(type(obj))]
    if isinstance(obj, type):
        kinds.append(obj)
    for kind in kinds:
        with contextlib.suppress(Exception):
            names.update(n for n in dir(kind) if type(n) is str)
    for kind in (type(obj), type(type(obj)), *((obj,) if isinstance(obj, type) else ())):
        for base in getattr(kind, "__mro__", ()):
            names.update(n for n in vars(base) if type(n) is str)
    instance = getattr(obj, "__dict__", None)
    if isinstance(instance, dict):
        names.update(n for n in instance if type(n) is str)
    return names


def _public_names(obj: object) -> list[str]:
    try:
        names = dir(obj)
    except Exception:
        return []
    return [
        n for n in names if type(n) is str and not n.startswith("_") and n not in DENIED_ATTRIBUTES
    ]


def _items(obj: object) -> list[tuple[object, object]]:
    """Items plain bytecode can read: container elements (never iterators: it would use them up)."""
    try:
        if isinstance(obj, dict | types.MappingProxyType):
            return [(repr(k)[:40], v) for k, v in list(obj.items())[:256]] + [
                (f"key {i}", k)
                for i, k in enumerate(list(obj)[:256])
                if not isinstance(k, _SCALARS)
            ]
        if isinstance(obj, list | tuple | set | frozenset | deque):
            return list(enumerate(list(obj)[:256]))
    except Exception:
        return []
    if isinstance(obj, BaseException):
        parts: list[tuple[object, object]] = [("args", obj.args)]
        for name in ("obj", "value", "name", "path"):
            if hasattr(obj, name):
                parts.append((name, getattr(obj, name)))
        return parts
    return []


def home_is_runtime(home: object) -> bool:
    """Is ``home`` (a function's module name) one of the runtime's own modules?"""
    return isinstance(home, str) and any(
        home == h or home.startswith(h + ".") for h in _RUNTIME_HOMES
    )


def _unbound_method(function: types.FunctionType) -> bool:
    """Is ``function`` a method of a library class held without its receiver?

    Its qualified name says it was defined in a class body (``Counter.copy``, not
    ``f.<locals>.g``); a ``staticmethod`` is written to take any arguments and does not count.
    """
    parts = function.__qualname__.split(".")
    if len(parts) < 2 or parts[-2] == "<locals>":
        return False
    owner: object = sys.modules.get(function.__module__ or "")
    for part in parts[:-1]:
        owner = getattr(owner, part, None) if owner is not None else None
    if isinstance(owner, type):
        entry = owner.__dict__.get(parts[-1])
        return not isinstance(entry, staticmethod)
    return True


def _is_data(obj: object) -> bool:
    kind = type(obj)
    return any(kind is t for t in _DATA)  # ``is``: a metaclass may define ``__eq__``


def _is_globals(mapping: dict[object, object]) -> bool:
    if "__builtins__" in mapping and (
        mapping["__builtins__"] is builtins or mapping["__builtins__"] is builtins.__dict__
    ):
        return True
    name = mapping.get("__name__")
    module = sys.modules.get(name) if isinstance(name, str) else None
    return module is not None and vars(module) is mapping


def _state(obj: object) -> tuple[tuple[tuple[object, object], ...], object] | None:
    """A comparable picture of a host object's mutable state, and what restoring it needs."""
    if isinstance(obj, _SCALARS):
        return None
    if isinstance(obj, dict):
        return tuple((k if type(k) is str else id(k), id(v)) for k, v in obj.items()), dict(obj)
    if isinstance(obj, list | deque | bytearray):
        return tuple((i, id(v)) for i, v in enumerate(obj)), list(obj)
    if isinstance(obj, set):
        return tuple(sorted((id(v), 0) for v in obj)), set(obj)
    attributes = getattr(obj, "__dict__", None)
    if isinstance(attributes, dict | types.MappingProxyType):
        # Reading a class's ``__annotations__`` makes the interpreter store an empty dict there
        # (a cache every reader creates, not a change the code chose).
        items = tuple(
            (k, id(v)) for k, v in attributes.items() if not (k == "__annotations__" and v == {})
        )
        return items, dict(attributes)
    return None


def _restore(snap: _Snapshot) -> None:
    """Put a changed host object back as it was (best effort; the report already says it)."""
    obj, saved = snap.obj, snap.saved
    with contextlib.suppress(Exception):
        if isinstance(obj, dict) and isinstance(saved, dict):
            obj.clear()
            obj.update(saved)
        elif isinstance(obj, list | deque | bytearray) and isinstance(saved, list):
            obj.clear()
            obj.extend(saved)
        elif isinstance(obj, set) and isinstance(saved, set):
            obj.clear()
            obj.update(saved)
        elif isinstance(saved, dict):
            current = obj.__dict__
            setter = type.__setattr__ if isinstance(obj, type) else object.__setattr__
            deleter = type.__delattr__ if isinstance(obj, type) else object.__delattr__
            for key in [k for k in current if k not in saved]:
                deleter(obj, key)
            for key, value in saved.items():
                if current.get(key, _MISSING) is not value:
                    with contextlib.suppress(Exception):
                        setter(obj, key, value)
