# Model-style snippets with small sqlite3 databases.

# %% sqlite-memory-basic
import sqlite3

conn = sqlite3.connect(":memory:")
conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, age INTEGER)")
conn.executemany("INSERT INTO users (name, age) VALUES (?, ?)", [("Ana", 31), ("Ben", 25), ("Cy", 40)])
rows = conn.execute("SELECT name FROM users WHERE age > 30 ORDER BY name").fetchall()
print(rows)
assert rows == [("Ana",), ("Cy",)]
conn.close()

# %% sqlite-file-db
import sqlite3

conn = sqlite3.connect("shop.db")
cur = conn.cursor()
cur.execute("CREATE TABLE IF NOT EXISTS items (sku TEXT, price REAL)")
cur.executemany("INSERT INTO items VALUES (?, ?)", [("a1", 9.99), ("b2", 4.5)])
conn.commit()
conn.close()
conn = sqlite3.connect("shop.db")
total = conn.execute("SELECT SUM(price) FROM items").fetchone()[0]
print(f"total = {total:.2f}")
assert round(total, 2) == 14.49

# %% sqlite-aggregate-groupby
import sqlite3

db = sqlite3.connect(":memory:")
db.execute("create table sales(region text, amount int)")
db.executemany("insert into sales values (?, ?)", [("n", 10), ("s", 5), ("n", 7), ("s", 1)])
result = dict(db.execute("select region, sum(amount) from sales group by region"))
print(result)
assert result == {"n": 17, "s": 6}

# %% sqlite-row-factory
import sqlite3

conn = sqlite3.connect(":memory:")
conn.row_factory = sqlite3.Row
conn.execute("CREATE TABLE t (k TEXT, v INTEGER)")
conn.execute("INSERT INTO t VALUES ('x', 1)")
row = conn.execute("SELECT * FROM t").fetchone()
print(dict(row))
assert row["k"] == "x" and row["v"] == 1

# %% sqlite-join
import sqlite3

c = sqlite3.connect(":memory:")
c.executescript("""
CREATE TABLE authors(id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE books(title TEXT, author_id INTEGER);
INSERT INTO authors VALUES (1, 'Le Guin'), (2, 'Pratchett');
INSERT INTO books VALUES ('Earthsea', 1), ('Mort', 2), ('Guards!', 2);
""")
counts = c.execute(
    "SELECT a.name, COUNT(*) FROM books b JOIN authors a ON a.id = b.author_id GROUP BY a.name ORDER BY a.name"
).fetchall()
print(counts)
assert counts == [("Le Guin", 1), ("Pratchett", 2)]

# %% sqlite-context-manager
import sqlite3

conn = sqlite3.connect(":memory:")
conn.execute("CREATE TABLE acct (id INTEGER, balance INTEGER CHECK (balance >= 0))")
conn.execute("INSERT INTO acct VALUES (1, 100)")
conn.commit()
try:
    with conn:
        conn.execute("UPDATE acct SET balance = balance - 150 WHERE id = 1")
except sqlite3.IntegrityError as exc:
    print("rolled back:", exc)
balance = conn.execute("SELECT balance FROM acct").fetchone()[0]
assert balance == 100

# %% sqlite-pandas
import sqlite3

import pandas as pd

conn = sqlite3.connect(":memory:")
pd.DataFrame({"x": [1, 2, 3], "y": [2, 4, 6]}).to_sql("points", conn, index=False)
df = pd.read_sql_query("SELECT x, y FROM points WHERE x >= 2", conn)
print(df)
assert df["y"].sum() == 10

# %% sqlite-custom-function
import sqlite3

conn = sqlite3.connect(":memory:")
conn.create_function("double", 1, lambda v: v * 2)
value = conn.execute("SELECT double(21)").fetchone()[0]
print(value)
assert value == 42

# %% sqlite-schema-inspect
import sqlite3

conn = sqlite3.connect(":memory:")
conn.execute("CREATE TABLE metrics (name TEXT NOT NULL, value REAL)")
cols = [row[1] for row in conn.execute("PRAGMA table_info(metrics)")]
tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
print(tables, cols)
assert tables == ["metrics"] and cols == ["name", "value"]

# %% sqlite-upsert
import sqlite3

conn = sqlite3.connect(":memory:")
conn.execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER)")
for k, v in [("a", 1), ("b", 2), ("a", 3)]:
    conn.execute("INSERT INTO kv VALUES (?, ?) ON CONFLICT(k) DO UPDATE SET v = v + excluded.v", (k, v))
data = dict(conn.execute("SELECT k, v FROM kv ORDER BY k"))
print(data)
assert data == {"a": 4, "b": 2}
