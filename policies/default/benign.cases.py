# Ordinary agent code the default pack must let through (no findings at all).

# case: data wrangling with the standard library
import csv, io, json, statistics
from collections import Counter, defaultdict
from dataclasses import dataclass

@dataclass(frozen=True)
class Row:
    name: str
    score: float

raw = "name,score\nann,3.5\nbob,4.0\n"
rows = [Row(r["name"], float(r["score"])) for r in csv.DictReader(io.StringIO(raw))]
by_initial = defaultdict(list)
for row in rows:
    by_initial[row.name[0]].append(row.score)
print(json.dumps({k: statistics.mean(v) for k, v in by_initial.items()}, indent=2))
print(Counter(r.name for r in rows).most_common(1))  # ok: SX501

# case: text processing
import re, textwrap, string
words = re.findall(r"[a-z]+", "The quick brown fox".lower())
print(textwrap.fill(" ".join(words), width=20))
print(string.ascii_lowercase.index("q"))  # ok: SX401

# case: math, dates and randomness
import math, random, datetime, itertools, functools, heapq, fractions, decimal
random.seed(0)
heap = [random.randint(0, 100) for _ in range(1000)]
heapq.heapify(heap)
print(math.sqrt(sum(heap)), datetime.date(2024, 1, 1).isoformat())
print(list(itertools.islice(itertools.permutations("abc"), 3)))
print(functools.reduce(lambda a, b: a * b, range(1, 20)), fractions.Fraction(1, 3), decimal.Decimal("0.1"))  # ok: SX301

# case: files in the workdir with pathlib
from pathlib import Path
out = Path("results")
out.mkdir(exist_ok=True)
(out / "summary.txt").write_text("done\n")
print(sorted(p.name for p in out.iterdir()))  # ok: SX305

# case: classes with dunder methods and properties
class Vector:
    __slots__ = ("x", "y")
    def __init__(self, x, y):
        self.x, self.y = x, y
    def __add__(self, other):
        return Vector(self.x + other.x, self.y + other.y)
    def __eq__(self, other):
        return (self.x, self.y) == (other.x, other.y)
    @property
    def norm(self):
        return (self.x ** 2 + self.y ** 2) ** 0.5
print((Vector(1, 2) + Vector(3, 4)).norm, Vector(1, 1) == Vector(1, 1))  # ok: SX401

# case: generators, match statements and exceptions
def chunks(seq, n):
    for i in range(0, len(seq), n):
        yield seq[i : i + n]
for chunk in chunks(list(range(10)), 3):
    match chunk:
        case [a, b, c]:
            print(a + b + c)
        case [a]:
            print(a)
try:
    int("x")
except ValueError as err:
    print("bad:", err)  # ok: SX402
