# Model-style snippets that work with files in the working directory.

# %% open-write-read
with open("notes.txt", "w") as f:
    f.write("first line\nsecond line\n")
with open("notes.txt") as f:
    lines = f.read().splitlines()
print(lines)
assert lines == ["first line", "second line"]

# %% os-makedirs-listdir
import os

os.makedirs("out/reports", exist_ok=True)
for name in ["a.txt", "b.txt"]:
    with open(os.path.join("out", "reports", name), "w") as fh:
        fh.write(name.upper())
entries = sorted(os.listdir("out/reports"))
print(entries)
assert entries == ["a.txt", "b.txt"]

# %% os-path-helpers
import os

path = os.path.join("data", "raw", "file.csv")
print(os.path.basename(path), os.path.dirname(path), os.path.splitext(path)[1])
assert os.path.splitext(path) == (os.path.join("data", "raw", "file"), ".csv")
assert not os.path.exists(path)

# %% pathlib-write-read
from pathlib import Path

p = Path("hello.txt")
p.write_text("hello world")
content = p.read_text()
print(content, p.suffix, p.stem)
assert content == "hello world" and p.exists()

# %% pathlib-mkdir-glob
from pathlib import Path

base = Path("project")
(base / "src").mkdir(parents=True, exist_ok=True)
for stem in ("main", "util"):
    (base / "src" / f"{stem}.py").write_text("# code\n")
found = sorted(p.name for p in base.glob("src/*.py"))
print(found)
assert found == ["main.py", "util.py"]

# %% glob-csv-files
import glob

for i in range(3):
    with open(f"part_{i}.csv", "w") as f:
        f.write("x,y\n1,2\n")
files = sorted(glob.glob("part_*.csv"))
print(files)
assert files == ["part_0.csv", "part_1.csv", "part_2.csv"]

# %% shutil-copy-move
import os
import shutil

with open("source.txt", "w") as f:
    f.write("payload")
shutil.copy("source.txt", "copy.txt")
os.makedirs("archive", exist_ok=True)
shutil.move("copy.txt", "archive/copy.txt")
with open("archive/copy.txt") as f:
    assert f.read() == "payload"
print("copied and moved")

# %% tempfile-directory
import os
import tempfile

with tempfile.TemporaryDirectory(dir=".") as tmp:
    target = os.path.join(tmp, "scratch.bin")
    with open(target, "wb") as f:
        f.write(b"\x00" * 16)
    size = os.path.getsize(target)
print("scratch size:", size)
assert size == 16

# %% csv-dictwriter-reader
import csv

rows = [{"name": "widget", "qty": 3}, {"name": "gadget", "qty": 5}]
with open("inventory.csv", "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=["name", "qty"])
    writer.writeheader()
    writer.writerows(rows)
with open("inventory.csv", newline="") as f:
    total = sum(int(r["qty"]) for r in csv.DictReader(f))
print("total qty:", total)
assert total == 8

# %% json-config-file
import json

config = {"model": "small", "layers": 4, "tags": ["a", "b"]}
with open("config.json", "w") as f:
    json.dump(config, f, indent=2)
with open("config.json") as f:
    loaded = json.load(f)
print(loaded)
assert loaded == config

# %% append-log-lines
for i in range(5):
    with open("run.log", "a") as log:
        log.write(f"step {i} done\n")
with open("run.log") as log:
    count = sum(1 for _ in log)
print("lines:", count)
assert count == 5

# %% os-walk-sizes
import os

os.makedirs("tree/a/b", exist_ok=True)
for rel in ("tree/x.txt", "tree/a/y.txt", "tree/a/b/z.txt"):
    with open(rel, "w") as f:
        f.write("12345")
total = 0
for root, dirs, files in os.walk("tree"):
    for name in files:
        total += os.path.getsize(os.path.join(root, name))
print("bytes:", total)
assert total == 15

# %% binary-struct-file
import struct

with open("points.bin", "wb") as f:
    for x, y in [(1, 2), (3, 4)]:
        f.write(struct.pack("<ii", x, y))
with open("points.bin", "rb") as f:
    data = f.read()
points = [struct.unpack_from("<ii", data, off) for off in range(0, len(data), 8)]
print(points)
assert points == [(1, 2), (3, 4)]

# %% os-remove-rename
import os

with open("draft.txt", "w") as f:
    f.write("v1")
os.rename("draft.txt", "final.txt")
assert os.path.exists("final.txt") and not os.path.exists("draft.txt")
os.remove("final.txt")
print("cleaned up")
assert not os.path.exists("final.txt")

# %% pathlib-iterdir-stat
from pathlib import Path

folder = Path("data")
folder.mkdir(exist_ok=True)
for i in range(3):
    (folder / f"f{i}.txt").write_text("x" * (i + 1))
sizes = {p.name: p.stat().st_size for p in sorted(folder.iterdir())}
print(sizes)
assert sizes == {"f0.txt": 1, "f1.txt": 2, "f2.txt": 3}

# %% os-getcwd-relative
import os

cwd = os.getcwd()
with open("here.txt", "w") as f:
    f.write("x")
print("working in", os.path.basename(cwd))
assert os.path.isfile(os.path.join(cwd, "here.txt"))
