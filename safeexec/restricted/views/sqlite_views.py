"""The ``sqlite3`` view: databases in memory, loaded from and saved to workdir files.

SQLite never opens a path here. ``connect("shop.db")`` reads the file's bytes through the workdir
layer (``BoundPath``: beneath the workdir, no link, one hard link) into an in-memory database
(``deserialize``) and writes it back the same way whenever a change is committed, so the library
creates no journal, WAL or temporary file anywhere (``temp_store`` is memory) and a link planted
beside the database is never followed. ``":memory:"`` is a plain in-memory database; URI file
names (``file:...``, ``uri=True``), ``factory=`` and extension loading are refused.

Each connection has an authorizer the code cannot replace (it holds a view, never the
``sqlite3.Connection``): ``ATTACH`` of anything but a new in-memory database is denied (which
also denies ``VACUUM INTO '/path'``), PRAGMAs outside a documented list are denied, and so are
the SQL functions that load code (``load_extension``, ``fts3_tokenizer``). A progress handler
ends a long statement when the run's budget is spent, and keeps a ``KeyboardInterrupt`` that
arrives during the statement (the ``sqlite3`` module would swallow it) to raise afterwards.
Callbacks the code registers (``create_function``, ``row_factory``) are its own functions and run
under its guards; a row factory is handed the cursor's view.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from safeexec.restricted.guards import GuardError, RuntimeClass
from safeexec.restricted.workdir_files import WorkdirOps

if TYPE_CHECKING:
    from safeexec.restricted.cell import Cell

# A database file is read into memory and grows there: the same bound as a written file
# (the default pack's ``file_size_bytes``; the worker's RLIMIT_FSIZE stops larger writes too).
MAX_DATABASE_BYTES = 64 * 1024 * 1024
# Virtual-machine steps between two looks at the budget.
_PROGRESS_STEPS = 2000

# PRAGMAs the code may run; those in ``_SETTABLE`` it may also set. Anything else (``temp_store``,
# ``temp_store_directory``, ``data_store_directory``, ``max_page_count``, ``mmap_size``…) is
# denied: they move data to files or lift the size bound.
_READABLE_PRAGMAS = frozenset(
    [
        "table_info",
        "table_xinfo",
        "table_list",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "foreign_key_check",
        "database_list",
        "collation_list",
        "function_list",
        "module_list",
        "pragma_list",
        "compile_options",
        "integrity_check",
        "quick_check",
        "page_count",
        "page_size",
        "freelist_count",
        "encoding",
        "schema_version",
        "user_version",
        "application_id",
        "data_version",
        "foreign_keys",
        "journal_mode",
        "synchronous",
        "auto_vacuum",
        "cache_size",
        "busy_timeout",
        "recursive_triggers",
        "defer_foreign_keys",
        "case_sensitive_like",
        "optimize",
        "analysis_limit",
        "query_only",
        "automatic_index",
        "reverse_unordered_selects",
        "temp_store",
        "max_page_count",
        "secure_delete",
        "ignore_check_constraints",
        "incremental_vacuum",
        "shrink_memory",
        "cache_spill",
        "legacy_alter_table",
    ]
)
_SETTABLE_PRAGMAS = frozenset(
    [
        "foreign_keys",
        "user_version",
        "application_id",
        "journal_mode",
        "synchronous",
        "cache_size",
        "busy_timeout",
        "recursive_triggers",
        "defer_foreign_keys",
        "case_sensitive_like",
        "optimize",
        "analysis_limit",
        "query_only",
        "automatic_index",
        "reverse_unordered_selects",
        "ignore_check_constraints",
        "incremental_vacuum",
        "shrink_memory",
        "legacy_alter_table",
        "table_info",
        "table_xinfo",
        "table_list",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "foreign_key_check",
        "integrity_check",
        "quick_check",
        "page_size",
        "auto_vacuum",
        "secure_delete",
    ]
)
_DENIED_FUNCTIONS = frozenset({"load_extension", "fts3_tokenizer"})
_VIRTUAL_TABLE_MODULES = frozenset({"fts3", "fts4", "fts5", "rtree", "rtree_i32"})
_MEMORY_NAMES = frozenset({"", ":memory:"})
_READS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION})


def _authorize(action: int, first: str | None, second: str | None, *_: object) -> int:
    """The authorizer of every connection (see the module docstring)."""
    if action == sqlite3.SQLITE_ATTACH:
        return sqlite3.SQLITE_OK if first in _MEMORY_NAMES else sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA:
        name = (first or "").lower()
        allowed = _SETTABLE_PRAGMAS if second is not None else _READABLE_PRAGMAS
        return sqlite3.SQLITE_OK if name in allowed else sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION:
        return sqlite3.SQLITE_DENY if (second or "").lower() in _DENIED_FUNCTIONS else 0
    if action == sqlite3.SQLITE_CREATE_VTABLE:
        return sqlite3.SQLITE_OK if (second or "").lower() in _VIRTUAL_TABLE_MODULES else 1
    return sqlite3.SQLITE_OK


def _database_name(value: object) -> str:
    import pathlib

    from safeexec.restricted.views.workdir_views import WorkdirPath

    if isinstance(value, WorkdirPath | pathlib.PurePath):
        return str(value)
    if type(value) is not str:
        raise TypeError("connect(): the database must be a file name string or ':memory:'")
    return value


class SqliteConnection(metaclass=RuntimeClass):
    """What ``sqlite3.connect`` returns: the connection's methods, never the connection."""

    __slots__ = ("_cell", "_conn", "_held", "_ops", "_state", "_target")
    _conn: sqlite3.Connection
    _cell: Cell
    _ops: WorkdirOps
    _target: str | None
    _state: tuple[int, int]
    _held: list[BaseException]

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise GuardError("connections come from sqlite3.connect() only")

    @classmethod
    def _open(
        cls, cell: Cell, ops: WorkdirOps, target: str | None, **options: Any
    ) -> SqliteConnection:
        data = b""
        if target is not None:
            if ops.exists(target):
                if ops.getsize(target) > MAX_DATABASE_BYTES:
                    raise sqlite3.DatabaseError(f"{target!r} is larger than the database bound")
                data = ops.apply(target, "connect", lambda p: p.read_bytes())
            else:
                ops.apply(target, "connect", lambda p: p.write_bytes(b""))
        conn = sqlite3.connect(":memory:", **options)
        try:
            if data:
                conn.deserialize(data)
            conn.execute("PRAGMA temp_store = MEMORY")
            page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
            conn.execute(f"PRAGMA max_page_count = {max(1, MAX_DATABASE_BYTES // page_size)}")
            conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_DATABASE_BYTES)
            conn.set_authorizer(_authorize)
        except BaseException:
            conn.close()
            raise
        view = object.__new__(cls)
        setter = object.__setattr__
        setter(view, "_conn", conn)
        setter(view, "_cell", cell)
        setter(view, "_ops", ops)
        setter(view, "_target", target)
        setter(view, "_held", [])
        setter(view, "_state", view._signature())
        conn.set_progress_handler(view._progress, _PROGRESS_STEPS)
        return view

    def __setattr__(self, name: str, value: object) -> None:
        if name not in ("row_factory", "text_factory", "isolation_level"):
            raise GuardError(f"cannot set {name!r} on a connection in restricted mode")
        object.__setattr__(self, name, value)

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("connections cannot be pickled or copied in restricted mode")

    # -- the runtime's part ----------------------------------------------------------------------
    def _progress(self) -> int:
        """Stop the statement when the budget is spent; keep an interrupt to raise afterwards."""
        try:
            return 1 if self._cell.budget.exhausted else 0
        except BaseException as exc:  # KeyboardInterrupt delivered inside the statement
            self._held.append(exc)
            return 1

    def _call(self, operation: Callable[[], Any], *, save: bool = True) -> Any:
        """Run one library call; re-raise a held interrupt, save committed changes."""
        try:
            result = operation()
        finally:
            if self._held:
                held = self._held[0]
                self._held.clear()
                raise held
        if save:
            self._save()
        return result

    def _callback(self, func: Callable[..., Any]) -> Callable[..., Any]:
        """``func`` for the library to call: an interrupt raised in it is held, not swallowed."""

        def call(*args: Any) -> Any:
            try:
                return func(*args)
            except Exception:
                raise
            except BaseException as exc:
                self._held.append(exc)
                raise

        call.__wrapped__ = func  # type: ignore[attr-defined]
        return call

    def _signature(self) -> tuple[int, int]:
        version = self._conn.execute("PRAGMA schema_version").fetchone()[0]
        return self._conn.total_changes, int(version)

    def _save(self) -> None:
        """Write the database back to its file when a change is committed."""
        if self._target is None or self._conn.in_transaction:
            return
        state = self._signature()
        if state == self._state:
            return
        data = self._conn.serialize()
        self._ops.apply(self._target, "sqlite3", lambda p: p.write_bytes(data))
        object.__setattr__(self, "_state", state)

    def _wrap_cursor(self, cursor: sqlite3.Cursor) -> SqliteCursor:
        return SqliteCursor._wrap(cursor, self)

    def _factory(self, factory: Any) -> Any:
        """A row factory the library calls with the real cursor: handed the cursor's view."""
        if factory is None or factory is sqlite3.Row:
            return factory
        if not callable(factory):
            raise TypeError("row_factory must be callable")

        rows = self._callback(lambda cursor, row: factory(self._wrap_cursor(cursor), row))
        rows.__wrapped__ = factory  # type: ignore[attr-defined]
        return rows

    # -- what the code calls ---------------------------------------------------------------------
    def cursor(self) -> SqliteCursor:
        return self._wrap_cursor(self._conn.cursor())

    # A new cursor's, as in ``sqlite3``: one path for a statement, the cursor's.
    def execute(self, sql: str, parameters: Any = ()) -> SqliteCursor:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Any]) -> SqliteCursor:
        return self.cursor().executemany(sql, parameters)

    def executescript(self, script: str) -> SqliteCursor:
        return self.cursor().executescript(script)

    def commit(self) -> None:
        self._call(self._conn.commit)

    def rollback(self) -> None:
        self._call(self._conn.rollback)

    def close(self) -> None:
        if self._conn.in_transaction:
            self._conn.rollback()  # like SQLite: what was not committed is lost
        self._save()
        self._conn.close()

    def interrupt(self) -> None:
        self._conn.interrupt()

    def create_function(
        self,
        name: str,
        narg: int,
        func: Callable[..., object] | None,
        *,
        deterministic: bool = False,
    ) -> None:
        wrapped = None if func is None else self._callback(func)
        self._conn.create_function(name, narg, wrapped, deterministic=deterministic)

    def create_aggregate(self, name: str, n_arg: int, aggregate_class: object) -> None:
        self._conn.create_aggregate(name, n_arg, aggregate_class)  # type: ignore[arg-type]

    def create_collation(self, name: str, callable: Callable[[str, str], int] | None) -> None:
        self._conn.create_collation(name, None if callable is None else self._callback(callable))

    def iterdump(self) -> Iterator[str]:
        return iter(list(self._conn.iterdump()))

    def backup(
        self,
        target: SqliteConnection,
        *,
        pages: int = -1,
        progress: Callable[[int, int, int], object] | None = None,
        name: str = "main",
        sleep: float = 0.25,
    ) -> None:
        """Copy this database into another connection's (``target`` is a connection view)."""
        if type(target) is not type(self):
            raise TypeError("backup(): the target must be a sqlite3 connection")
        self._conn.backup(target._conn, pages=pages, progress=progress, name=name, sleep=0)
        target._save()

    def serialize(self, *, name: str = "main") -> bytes:
        return self._conn.serialize(name=name)

    @property
    def total_changes(self) -> int:
        return self._conn.total_changes

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction

    @property
    def isolation_level(self) -> str | None:
        return self._conn.isolation_level

    @isolation_level.setter
    def isolation_level(self, value: str | None) -> None:
        self._call(lambda: setattr(self._conn, "isolation_level", value))

    @property
    def row_factory(self) -> object:
        factory = self._conn.row_factory
        return getattr(factory, "__wrapped__", factory)

    @row_factory.setter
    def row_factory(self, value: object) -> None:
        self._conn.row_factory = self._factory(value)

    @property
    def text_factory(self) -> object:
        return self._conn.text_factory

    @text_factory.setter
    def text_factory(self, value: object) -> None:
        if not callable(value):
            raise TypeError("text_factory must be callable")
        self._conn.text_factory = value

    def __enter__(self) -> SqliteConnection:
        return self

    def __exit__(self, kind: object, *rest: object) -> None:
        self._call(self._conn.rollback if kind is not None else self._conn.commit)

    def __repr__(self) -> str:
        where = ":memory:" if self._target is None else self._target
        return f"<restricted sqlite3 connection {where!r}>"


class SqliteCursor(metaclass=RuntimeClass):
    """A cursor's view: executing, fetching and its description; ``connection`` is the view."""

    __slots__ = ("_connection", "_cursor")
    _cursor: sqlite3.Cursor
    _connection: SqliteConnection

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise GuardError("cursors come from a connection only")

    @classmethod
    def _wrap(cls, cursor: sqlite3.Cursor, connection: SqliteConnection) -> SqliteCursor:
        view = object.__new__(cls)
        object.__setattr__(view, "_cursor", cursor)
        object.__setattr__(view, "_connection", connection)
        return view

    def __setattr__(self, name: str, value: object) -> None:
        if name not in ("row_factory", "arraysize"):
            raise GuardError(f"cannot set {name!r} on a cursor in restricted mode")
        object.__setattr__(self, name, value)

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("cursors cannot be pickled or copied in restricted mode")

    def execute(self, sql: str, parameters: Any = ()) -> SqliteCursor:
        self._connection._call(lambda: self._cursor.execute(sql, parameters))
        return self

    def executemany(self, sql: str, parameters: Iterable[Any]) -> SqliteCursor:
        self._connection._call(lambda: self._cursor.executemany(sql, parameters))
        return self

    def executescript(self, script: str) -> SqliteCursor:
        self._connection._call(lambda: self._cursor.executescript(script))
        return self

    def fetchone(self) -> object:
        return self._connection._call(self._cursor.fetchone, save=False)

    def fetchmany(self, size: int | None = None) -> list[object]:
        size = self._cursor.arraysize if size is None else size
        return self._connection._call(lambda: self._cursor.fetchmany(size), save=False)

    def fetchall(self) -> list[object]:
        return self._connection._call(self._cursor.fetchall, save=False)

    def close(self) -> None:
        self._cursor.close()

    def setinputsizes(self, sizes: object) -> None:
        """Does nothing (as in ``sqlite3``)."""

    def setoutputsize(self, size: object, column: object = None) -> None:
        """Does nothing (as in ``sqlite3``)."""

    def __iter__(self) -> SqliteCursor:
        return self

    def __next__(self) -> object:
        row = self.fetchone()
        if row is None:
            raise StopIteration
        return row

    @property
    def connection(self) -> SqliteConnection:
        return self._connection

    @property
    def description(self) -> object:
        return self._cursor.description

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def lastrowid(self) -> int | None:
        return self._cursor.lastrowid

    @property
    def arraysize(self) -> int:
        return self._cursor.arraysize

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._cursor.arraysize = value

    @property
    def row_factory(self) -> object:
        factory = self._cursor.row_factory
        return getattr(factory, "__wrapped__", factory)

    @row_factory.setter
    def row_factory(self, value: object) -> None:
        self._cursor.row_factory = self._connection._factory(value)

    def __repr__(self) -> str:
        return "<restricted sqlite3 cursor>"


_EXCEPTIONS = [
    "Warning",
    "Error",
    "InterfaceError",
    "DatabaseError",
    "DataError",
    "OperationalError",
    "IntegrityError",
    "InternalError",
    "ProgrammingError",
    "NotSupportedError",
]


def sqlite_views(cell: Cell, ops: WorkdirOps) -> Mapping[str, dict[str, object]]:
    """The ``sqlite3`` view for one executor's workdir."""

    def connect(
        database: object,
        timeout: float = 5.0,
        detect_types: int = 0,
        isolation_level: str | None = "DEFERRED",
        check_same_thread: bool = True,
        factory: object = None,
        cached_statements: int = 128,
        uri: bool = False,
    ) -> SqliteConnection:
        name = _database_name(database)
        if uri or name.startswith("file:"):
            raise GuardError("sqlite3 URI file names are not available in restricted mode")
        if factory is not None:
            raise GuardError("sqlite3.connect(factory=...) is not available in restricted mode")
        target = None if name in _MEMORY_NAMES else name
        return SqliteConnection._open(
            cell,
            ops,
            target,
            timeout=timeout,
            detect_types=detect_types,
            isolation_level=isolation_level,
            check_same_thread=check_same_thread,
            cached_statements=cached_statements,
        )

    for kind, names in (
        (SqliteConnection, ("row_factory", "text_factory", "isolation_level")),
        (SqliteCursor, ("row_factory", "arraysize")),
    ):
        cell.guards.writable_attributes[kind] = frozenset(names)
    view: dict[str, object] = {name: getattr(sqlite3, name) for name in _EXCEPTIONS}
    view.update(
        connect=connect,
        Connection=SqliteConnection,
        Cursor=SqliteCursor,
        Row=sqlite3.Row,
        PARSE_DECLTYPES=sqlite3.PARSE_DECLTYPES,
        PARSE_COLNAMES=sqlite3.PARSE_COLNAMES,
        complete_statement=sqlite3.complete_statement,
        sqlite_version=sqlite3.sqlite_version,
        sqlite_version_info=sqlite3.sqlite_version_info,
        paramstyle=sqlite3.paramstyle,
        apilevel=sqlite3.apilevel,
    )
    return {"sqlite3": view}
