# Model-style snippets with compressed files and archives.

# %% gzip-roundtrip
import gzip

text = "line\n" * 1000
with gzip.open("log.txt.gz", "wt") as f:
    f.write(text)
with gzip.open("log.txt.gz", "rt") as f:
    back = f.read()
print("lines:", back.count("\n"))
assert back == text

# %% gzip-bytes
import gzip

raw = b"abc" * 500
packed = gzip.compress(raw)
print(len(raw), "->", len(packed))
assert gzip.decompress(packed) == raw and len(packed) < len(raw)

# %% zipfile-write-read
import zipfile

with zipfile.ZipFile("bundle.zip", "w", compression=zipfile.ZIP_DEFLATED) as zf:
    zf.writestr("readme.txt", "hello")
    zf.writestr("data/values.csv", "a,b\n1,2\n")
with zipfile.ZipFile("bundle.zip") as zf:
    names = sorted(zf.namelist())
    readme = zf.read("readme.txt").decode()
print(names, readme)
assert names == ["data/values.csv", "readme.txt"] and readme == "hello"

# %% zipfile-extract
import os
import zipfile

with open("report.txt", "w") as f:
    f.write("quarterly numbers")
with zipfile.ZipFile("out.zip", "w") as zf:
    zf.write("report.txt")
os.makedirs("unzipped", exist_ok=True)
with zipfile.ZipFile("out.zip") as zf:
    zf.extractall("unzipped")
with open("unzipped/report.txt") as f:
    assert f.read() == "quarterly numbers"
print("extracted")

# %% zlib-compress
import zlib

data = ("compress me " * 200).encode()
small = zlib.compress(data, 9)
print(f"ratio {len(small) / len(data):.3f}")
assert zlib.decompress(small) == data
assert zlib.crc32(data) == zlib.crc32(zlib.decompress(small))

# %% tarfile-roundtrip
import io
import tarfile

with tarfile.open("pack.tar.gz", "w:gz") as tar:
    blob = b"tar content"
    info = tarfile.TarInfo("inside.txt")
    info.size = len(blob)
    tar.addfile(info, io.BytesIO(blob))
with tarfile.open("pack.tar.gz") as tar:
    member = tar.extractfile("inside.txt")
    assert member is not None
    content = member.read()
print(content)
assert content == b"tar content"

# %% bz2-lzma
import bz2
import lzma

payload = b"xyz" * 1000
assert bz2.decompress(bz2.compress(payload)) == payload
assert lzma.decompress(lzma.compress(payload)) == payload
print("bz2 and lzma roundtrip ok")

# %% zipfile-in-memory
import io
import zipfile

buffer = io.BytesIO()
with zipfile.ZipFile(buffer, "w") as zf:
    for i in range(3):
        zf.writestr(f"file{i}.txt", str(i) * (i + 1))
buffer.seek(0)
with zipfile.ZipFile(buffer) as zf:
    sizes = {info.filename: info.file_size for info in zf.infolist()}
print(sizes)
assert sizes == {"file0.txt": 1, "file1.txt": 2, "file2.txt": 3}

# %% gzip-csv-pandas
import pandas as pd

df = pd.DataFrame({"k": list("abc"), "v": [1, 2, 3]})
df.to_csv("table.csv.gz", index=False, compression="gzip")
back = pd.read_csv("table.csv.gz")
print(back)
assert back["v"].sum() == 6

# %% base64-zip-payload
import base64
import io
import zipfile

buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as zf:
    zf.writestr("a.txt", "alpha")
encoded = base64.b64encode(buf.getvalue()).decode()
with zipfile.ZipFile(io.BytesIO(base64.b64decode(encoded))) as zf:
    assert zf.read("a.txt") == b"alpha"
print("payload size", len(encoded))
