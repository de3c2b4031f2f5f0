# Model-style text processing snippets.

# %% word-frequency
from collections import Counter

text = "the quick brown fox jumps over the lazy dog the end"
counts = Counter(text.split())
print(counts.most_common(2))
assert counts.most_common(1) == [("the", 3)]

# %% regex-emails
import re

doc = "Contact ana@example.com or bob.smith@test.org for details."
emails = re.findall(r"[\w.]+@[\w.]+\.\w+", doc)
print(emails)
assert emails == ["ana@example.com", "bob.smith@test.org"]

# %% regex-named-groups
import re

line = "2024-03-15 ERROR disk full"
m = re.match(r"(?P<date>\d{4}-\d{2}-\d{2}) (?P<level>\w+) (?P<msg>.*)", line)
assert m is not None
print(m.group("level"), "-", m.group("msg"))
assert m.groupdict() == {"date": "2024-03-15", "level": "ERROR", "msg": "disk full"}

# %% palindrome-check
def is_palindrome(s: str) -> bool:
    cleaned = "".join(ch.lower() for ch in s if ch.isalnum())
    return cleaned == cleaned[::-1]

tests = ["A man, a plan, a canal: Panama", "hello", "Was it a car or a cat I saw?"]
results = [is_palindrome(t) for t in tests]
print(results)
assert results == [True, False, True]

# %% textwrap-fill
import textwrap

para = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor."
wrapped = textwrap.fill(para, width=30)
print(wrapped)
assert all(len(line) <= 30 for line in wrapped.splitlines())

# %% string-template
from string import Template

tpl = Template("Hello $name, you owe $$${amount}")
msg = tpl.substitute(name="Ana", amount="12.50")
print(msg)
assert msg == "Hello Ana, you owe $12.50"

# %% fstring-table
rows = [("apples", 3, 0.5), ("pears", 10, 0.25)]
lines = [f"{name:<8}{qty:>4}{price:>8.2f}" for name, qty, price in rows]
print("\n".join(lines))
assert lines[0] == "apples     3    0.50"

# %% unicode-normalize
import unicodedata

s = "Café naïve"
stripped = "".join(
    c for c in unicodedata.normalize("NFD", s) if unicodedata.category(c) != "Mn"
)
print(stripped)
assert stripped == "Cafe naive"

# %% difflib-close-matches
import difflib

words = ["apple", "apricot", "banana", "grape"]
print(difflib.get_close_matches("appel", words))
assert difflib.get_close_matches("appel", words)[0] == "apple"

# %% caesar-cipher
import string

def caesar(msg: str, shift: int) -> str:
    lower = string.ascii_lowercase
    table = str.maketrans(lower, lower[shift:] + lower[:shift])
    return msg.translate(table)

enc = caesar("hello world", 3)
print(enc)
assert enc == "khoor zruog"
assert caesar(enc, -3) == "hello world"

# %% slugify
import re

def slugify(title: str) -> str:
    title = title.strip().lower()
    title = re.sub(r"[^a-z0-9]+", "-", title)
    return title.strip("-")

print(slugify("  Hello, World! 2024 Edition "))
assert slugify("  Hello, World! 2024 Edition ") == "hello-world-2024-edition"

# %% base64-hash
import base64
import hashlib

payload = "secret message".encode()
encoded = base64.b64encode(payload).decode()
digest = hashlib.sha256(payload).hexdigest()
print(encoded, digest[:12])
assert base64.b64decode(encoded) == payload
assert len(digest) == 64

# %% html-escape
import html

snippet = '<a href="x">Tom & Jerry</a>'
escaped = html.escape(snippet)
print(escaped)
assert html.unescape(escaped) == snippet
assert "&lt;a" in escaped

# %% csv-from-string
import csv
import io

raw = "name,age\nAna,31\nBen,27\n"
rows = list(csv.DictReader(io.StringIO(raw)))
ages = {r["name"]: int(r["age"]) for r in rows}
print(ages)
assert ages == {"Ana": 31, "Ben": 27}
