"""The restricted ``sqlite3`` view: in-memory databases saved through the workdir layer, an
authorizer the code cannot replace, and no library object handed out."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from safeexec.restricted import (
    GuardError,
    OperationBudget,
    RestrictedExecutor,
)
from safeexec.restricted.views import WorkerViews, sqlite_views

IMPORTS = ("sqlite3", "os", "os.path")


def _executor(workdir: Path, **options: object) -> RestrictedExecutor:
    return RestrictedExecutor(views=WorkerViews, imports=IMPORTS, workdir=workdir, **options)  # type: ignore[arg-type]


def run(workdir: Path, code: str) -> str | None:
    return _executor(workdir).execute("import sqlite3\n" + code, filename="<test>")


def test_a_file_database_is_a_real_sqlite_file_written_on_commit(tmp_path: Path) -> None:
    run(
        tmp_path,
        "c = sqlite3.connect('shop.db')\nc.execute('create table t(x)')\n"
        "c.execute('insert into t values (1)')\nc.commit()\n"
        "c.execute('insert into t values (2)')\nc.close()\n",  # not committed: lost
    )
    rows = sqlite3.connect(tmp_path / "shop.db").execute("select x from t").fetchall()
    assert rows == [(1,)]
    assert (
        run(tmp_path, "sqlite3.connect('shop.db').execute('select count(*) from t').fetchone()")
        == "(1,)"
    )


def test_statements_of_the_statement_cache_are_saved_too(tmp_path: Path) -> None:
    run(
        tmp_path,
        "c = sqlite3.connect('kv.db')\nc.execute('create table kv(k)')\n"
        "for k in range(3):\n    c.execute('insert into kv values (?)', (k,))\n    c.commit()\n",
    )
    assert sqlite3.connect(tmp_path / "kv.db").execute("select count(*) from kv").fetchone() == (3,)


def test_connect_creates_the_file_and_leaves_no_journal(tmp_path: Path) -> None:
    run(tmp_path, "c = sqlite3.connect('a.db')\nwith c:\n    c.execute('create table t(x)')\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.db"]


@pytest.mark.parametrize(
    ("sql", "fragment"),
    [
        ("ATTACH DATABASE '{outside}' AS x", "not authorized"),
        ("ATTACH DATABASE 'file:{outside}?mode=rwc' AS x", "not authorized"),
        ("VACUUM INTO '{outside}'", "authorization denied"),
        ("PRAGMA temp_store = FILE", "not authorized"),
        ("PRAGMA temp_store_directory = '{outside_dir}'", "not authorized"),
        ("PRAGMA max_page_count = 999999999", "not authorized"),
        ("SELECT load_extension('{outside}')", "not authorized"),
        ("SELECT fts3_tokenizer('simple')", "not authorized"),
    ],
)
def test_sql_that_reaches_files_or_lifts_bounds_is_denied(
    tmp_path: Path, sql: str, fragment: str
) -> None:
    outside_dir = tmp_path / "outside"
    outside_dir.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    text = sql.format(outside=outside_dir / "x.db", outside_dir=outside_dir)
    with pytest.raises(sqlite3.DatabaseError, match=fragment):
        run(work, f"sqlite3.connect(':memory:').execute({text!r})")
    assert list(outside_dir.iterdir()) == []


def test_attach_of_a_parameter_and_vacuum_are_denied_but_memory_attach_works(
    tmp_path: Path,
) -> None:
    with pytest.raises(sqlite3.DatabaseError):
        run(tmp_path, "sqlite3.connect(':memory:').execute('ATTACH ? AS x', ('/tmp/x.db',))")
    code = (
        "c = sqlite3.connect(':memory:')\nc.execute(\"ATTACH ':memory:' AS m\")\n"
        "c.execute('create table m.t(x)')\nlen(c.execute('PRAGMA database_list').fetchall())"
    )
    assert run(tmp_path, code) == "2"


def test_the_authorizer_is_what_denies_attach(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The mechanism can fail: with an authorizer that allows everything, ATTACH reaches the path.
    monkeypatch.setattr(sqlite_views, "_authorize", lambda *args: sqlite3.SQLITE_OK)
    target = tmp_path / "attached.db"
    run(tmp_path, f"sqlite3.connect(':memory:').execute(\"ATTACH '{target}' AS x\")")
    assert target.exists()


@pytest.mark.parametrize(
    ("call", "error"),
    [
        ("sqlite3.connect('file:x.db?mode=rwc', uri=True)", GuardError),
        ("sqlite3.connect('file:x.db')", GuardError),
        ("sqlite3.connect(':memory:', factory=object)", GuardError),
        ("sqlite3.connect('/etc/x.db')", PermissionError),
        ("sqlite3.connect('../x.db')", PermissionError),
        ("sqlite3.connect(b'x.db')", TypeError),
        ("sqlite3.connect(':memory:').enable_load_extension(True)", AttributeError),
        ("sqlite3.connect(':memory:').set_authorizer(None)", AttributeError),
        ("sqlite3.connect(':memory:').set_progress_handler(None, 1)", AttributeError),
        ("sqlite3.register_adapter(int, str)", AttributeError),
        ("type(sqlite3.connect(':memory:'))()", GuardError),
        ("sqlite3.connect(':memory:').x = 1", GuardError),
    ],
)
def test_what_would_leave_the_workdir_or_reach_the_library_is_refused(
    tmp_path: Path, call: str, error: type[Exception]
) -> None:
    with pytest.raises(error):
        run(tmp_path, call)


def test_a_linked_database_file_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.db"
    sqlite3.connect(secret).execute("create table s(x)").connection.commit()
    work = tmp_path / "work"
    work.mkdir()
    (work / "linked.db").symlink_to(secret)
    (work / "dir").symlink_to(tmp_path)
    for name in ("linked.db", "dir/secret.db"):
        with pytest.raises((PermissionError, FileNotFoundError)):
            run(work, f"sqlite3.connect({name!r})")


def test_callbacks_see_views_not_library_objects(tmp_path: Path) -> None:
    code = (
        "c = sqlite3.connect(':memory:')\n"
        "c.row_factory = lambda cursor, row: (type(cursor).__name__, cursor.connection is c)\n"
        "c.create_function('twice', 1, lambda v: v * 2)\n"
        "cur = c.execute('select twice(21)')\n"
        "(cur.fetchone(), type(cur).__name__, cur.connection is c, c.row_factory is not None)"
    )
    assert run(tmp_path, code) == "(('SqliteCursor', True), 'SqliteCursor', True, True)"


def test_a_spent_budget_ends_a_long_statement(tmp_path: Path) -> None:
    executor = _executor(tmp_path, count_operations=True)
    executor.execute("import sqlite3\nc = sqlite3.connect(':memory:')\n", filename="<a>")
    budget = OperationBudget(10**9)
    budget.stop("wall_seconds")
    endless = (
        "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n"
    )
    executor.cell.budget = budget
    view = executor._namespace["c"]
    with pytest.raises(sqlite3.OperationalError, match="interrupted"):
        view.execute(endless)  # type: ignore[attr-defined]


def test_an_interrupt_during_a_statement_is_raised_not_swallowed(tmp_path: Path) -> None:
    executor = _executor(tmp_path)
    executor.execute("import sqlite3\nc = sqlite3.connect(':memory:')\n", filename="<a>")
    view = executor._namespace["c"]

    class Budget:
        @property
        def exhausted(self) -> bool:
            raise KeyboardInterrupt

    executor.cell.budget = Budget()  # type: ignore[assignment]
    endless = (
        "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n"
    )
    with pytest.raises(KeyboardInterrupt):
        view.execute(endless)  # type: ignore[attr-defined]


def test_a_database_grows_only_to_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_views, "MAX_DATABASE_BYTES", 1 << 20)
    with pytest.raises(sqlite3.DatabaseError, match=r"full|too big"):
        run(
            tmp_path,
            "c = sqlite3.connect('big.db')\nc.execute('create table t(b)')\n"
            "for _ in range(100):\n    c.execute('insert into t values (randomblob(100000))')\n",
        )
