"""``sqlite3`` in restricted mode reaching host files: ATTACH, VACUUM INTO, URI file names, paths
out of the workdir, links planted beside a database, extension loading.

In-process the library runs as the host's own uid, so any path SQLite opened itself would be a
host file. The view never lets it open one: databases live in memory and are read and written
through the workdir layer; the authorizer denies ATTACH of files (and VACUUM INTO) and PRAGMAs
that move data to files.
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


@pytest.mark.parametrize(
    "statement",
    [
        "ATTACH DATABASE '{secret}' AS host",
        "ATTACH DATABASE 'file:{secret}?mode=ro' AS host",
        "ATTACH DATABASE '{made}' AS host",
        "VACUUM INTO '{made}'",
        "PRAGMA temp_store_directory = '{outside}'",
        "SELECT load_extension('{made}')",
    ],
    ids=["attach-secret", "attach-uri", "attach-new", "vacuum-into", "temp-dir", "load-extension"],
)
def test_sql_cannot_name_a_host_file(
    restricted_box: BoxFactory, canaries: Canaries, statement: str
) -> None:
    box = restricted_box()
    outside = canaries.secret_file.parent
    sql = statement.format(secret=canaries.secret_file, made=outside / "made.db", outside=outside)
    outcome = box.run(
        "import sqlite3\nc = sqlite3.connect(':memory:')\n"
        f"try:\n    c.execute({sql!r})\n    print('RAN')\nexcept sqlite3.DatabaseError as e:\n"
        "    print('refused', e)\n"
    )
    assert outcome.status.value == "ok" and outcome.stdout.startswith("refused"), outcome.text
    assert not (outside / "made.db").exists()
    box.assert_usable()


@pytest.mark.parametrize(
    "call",
    [
        "sqlite3.connect({secret!r})",
        "sqlite3.connect('file:' + {secret!r} + '?mode=ro', uri=True)",
        "sqlite3.connect('file:' + {secret!r})",
        "sqlite3.connect({up!r})",
        "sqlite3.connect(':memory:').enable_load_extension(True)",
        "type(sqlite3.connect(':memory:').cursor().connection)(':memory:')",
    ],
    ids=["absolute", "uri", "file-prefix", "dotdot", "enable-load-extension", "constructor"],
)
def test_connect_cannot_open_a_host_file(
    restricted_box: BoxFactory, canaries: Canaries, tmp_path: Path, call: str
) -> None:
    box = restricted_box()
    up = str(Path("..") / ".." / canaries.secret_file.relative_to(canaries.secret_file.anchor))
    code = call.format(secret=str(canaries.secret_file), up=up)
    outcome = box.run(f"import sqlite3\nc = {code}\nprint(c.execute('select 1').fetchall())")
    assert outcome.status.value == "error", outcome.text
    assert any(e in outcome.text for e in ("PermissionError", "GuardError", "AttributeError"))
    box.assert_usable()


def test_links_planted_beside_a_database_are_never_followed(
    restricted_box: BoxFactory, canaries: Canaries, tmp_path: Path
) -> None:
    box = restricted_box()
    work = _workdir(tmp_path)
    secret = canaries.secret_file
    (work / "linked.db").symlink_to(secret)
    (work / "dir").symlink_to(secret.parent)
    # SQLite itself would open these by name: a hot journal, a WAL, a shared-memory file.
    for suffix in ("-journal", "-wal", "-shm"):
        (work / f"real.db{suffix}").symlink_to(secret)
    outcome = box.run(
        "import sqlite3\nseen = []\n"
        "for name in ('linked.db', 'dir/secret.txt', 'dir/new.db'):\n"
        "    try:\n        sqlite3.connect(name)\n        seen.append('opened')\n"
        "    except OSError as e:\n        seen.append(type(e).__name__)\n"
        "c = sqlite3.connect('real.db')\nc.execute('PRAGMA journal_mode = WAL')\n"
        "c.execute('create table t(x)')\nc.execute('insert into t values (1)')\nc.commit()\n"
        "c.close()\nprint(seen, sqlite3.connect('real.db').execute('select x from t').fetchall())"
    )
    assert outcome.status.value == "ok", outcome.text
    assert "opened" not in outcome.stdout and "[(1,)]" in outcome.stdout, outcome.text
    assert secret.read_text() == canaries.secret
    assert not (secret.parent / "new.db").exists()
    # Not opened with sqlite3 here: the host's library would follow the planted links itself.
    assert (work / "real.db").read_bytes().startswith(b"SQLite format 3\x00")


def test_a_database_swapped_for_a_link_after_connect_is_not_written_through(
    restricted_box: BoxFactory, canaries: Canaries, tmp_path: Path
) -> None:
    box = restricted_box()
    work = _workdir(tmp_path)
    box.run("import sqlite3\nc = sqlite3.connect('db.sqlite')\nc.execute('create table t(x)')")
    (work / "db.sqlite").unlink()
    (work / "db.sqlite").symlink_to(canaries.secret_file)  # the host swaps it between cells
    outcome = box.run("c.execute('insert into t values (1)')\nc.commit()")
    assert outcome.status.value == "error" and "PermissionError" in outcome.text, outcome.text
    assert canaries.secret_file.read_text() == canaries.secret
