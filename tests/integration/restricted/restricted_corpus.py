"""Ordinary agent code: each snippet must behave the same in restricted mode as in plain Python.

A snippet is one or more cells run in order in one session (state carries over); the tests compare
stdout and the final expression's repr with plain ``exec``. ``REFUSED`` lists code restricted mode
refuses on purpose (what the policy forbids), with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class Snippet:
    name: str
    category: str
    cells: tuple[str, ...]


def _s(name: str, category: str, *cells: str) -> Snippet:
    return Snippet(name=name, category=category, cells=cells)


CORPUS: tuple[Snippet, ...] = (
    # -- math --
    _s(
        "mean-and-stdev",
        "math",
        """
import statistics
data = [2.5, 3.1, 4.7, 5.0, 6.2]
print(round(statistics.mean(data), 3), round(statistics.stdev(data), 3))
statistics.median(data)
""",
    ),
    _s(
        "primes-sieve",
        "math",
        """
def primes(limit):
    sieve = [True] * (limit + 1)
    sieve[0] = sieve[1] = False
    for i in range(2, int(limit ** 0.5) + 1):
        if sieve[i]:
            for j in range(i * i, limit + 1, i):
                sieve[j] = False
    return [i for i, ok in enumerate(sieve) if ok]
primes(50)
""",
    ),
    _s(
        "gcd-lcm-factorial",
        "math",
        """
import math
print(math.gcd(84, 36), math.lcm(4, 6), math.factorial(10))
math.isqrt(10**12 + 7)
""",
    ),
    _s(
        "compound-interest",
        "math",
        """
principal, rate, years = 1000.0, 0.05, 10
balance = principal
history = []
for year in range(1, years + 1):
    balance *= 1 + rate
    history.append(round(balance, 2))
print(history[-1])
f"{balance:,.2f}"
""",
    ),
    _s(
        "fractions-and-decimals",
        "math",
        """
from fractions import Fraction
from decimal import Decimal, ROUND_HALF_UP
total = sum(Fraction(1, n) for n in range(1, 6))
price = Decimal("19.995").quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
(total, price)
""",
    ),
    _s(
        "matrix-multiply",
        "math",
        """
def matmul(a, b):
    return [[sum(x * y for x, y in zip(row, col)) for col in zip(*b)] for row in a]
a = [[1, 2], [3, 4]]
b = [[5, 6], [7, 8]]
matmul(a, b)
""",
    ),
    _s(
        "newton-sqrt",
        "math",
        """
def newton(n, tol=1e-12):
    x = n
    while abs(x * x - n) > tol:
        x = (x + n / x) / 2
    return x
round(newton(2), 10)
""",
    ),
    _s(
        "bit-tricks",
        "math",
        """
values = [5, 12, 255, 1024]
print([bin(v) for v in values], [hex(v) for v in values])
[v.bit_count() for v in values], [format(v, '08b') for v in values]
""",
    ),
    # -- text processing --
    _s(
        "word-frequency",
        "text",
        """
from collections import Counter
text = "the quick brown fox jumps over the lazy dog the end"
counts = Counter(text.split())
counts.most_common(3)
""",
    ),
    _s(
        "regex-extract-emails",
        "text",
        """
import re
text = "Contact alice@example.com or bob.smith@mail.org; not-an-email@."
re.findall(r"[\\w.]+@[\\w]+\\.[a-z]+", text)
""",
    ),
    _s(
        "title-case-and-slug",
        "text",
        """
import re
def slugify(title):
    title = title.lower().strip()
    title = re.sub(r"[^a-z0-9]+", "-", title)
    return title.strip("-")
titles = ["Hello, World!", "  Python 3.11 is out  ", "Ünïcode & more"]
[slugify(t) for t in titles]
""",
    ),
    _s(
        "str-format-and-fstrings",
        "text",
        """
name, score = "Ada", 97.456
lines = ["{} scored {:.1f}".format(name, score), f"{name!r:>8}|{score:08.2f}", "%s-%d" % (name, 3)]
print("\\n".join(lines))
"{name} has {n} items".format(name=name, n=3)
""",
    ),
    _s(
        "palindromes",
        "text",
        """
def is_palindrome(s):
    cleaned = "".join(ch.lower() for ch in s if ch.isalnum())
    return cleaned == cleaned[::-1]
[is_palindrome(s) for s in ["A man, a plan, a canal: Panama", "hello", "No 'x' in Nixon"]]
""",
    ),
    _s(
        "caesar-cipher",
        "text",
        """
import string
def caesar(text, shift):
    lower = string.ascii_lowercase
    table = str.maketrans(lower, lower[shift:] + lower[:shift])
    return text.translate(table)
encoded = caesar("attack at dawn", 3)
(encoded, caesar(encoded, -3))
""",
    ),
    _s(
        "text-wrap-and-dedent",
        "text",
        """
import textwrap
paragraph = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor."
print(textwrap.fill(paragraph, width=30))
textwrap.dedent('''
    indented
      more
''').strip()
""",
    ),
    _s(
        "csv-parse-from-string",
        "text",
        """
import csv, io
raw = "name,age\\nalice,31\\nbob,27\\n"
rows = list(csv.DictReader(io.StringIO(raw)))
sorted(rows, key=lambda r: int(r["age"]))
""",
    ),
    _s(
        "json-roundtrip",
        "text",
        """
import json
payload = {"items": [1, 2, 3], "meta": {"ok": True, "note": None}}
text = json.dumps(payload, sort_keys=True, indent=2)
print(text)
json.loads(text)["meta"]
""",
    ),
    _s(
        "difflib-close-matches",
        "text",
        """
import difflib
difflib.get_close_matches("appel", ["ape", "apple", "peach", "puppy"])
""",
    ),
    # -- data wrangling --
    _s(
        "group-by-with-defaultdict",
        "data",
        """
from collections import defaultdict
sales = [("north", 10), ("south", 5), ("north", 7), ("east", 3), ("south", 1)]
totals = defaultdict(int)
for region, amount in sales:
    totals[region] += amount
dict(sorted(totals.items()))
""",
    ),
    _s(
        "counts-augmented-subscript",
        "data",
        """
counts = {}
for ch in "mississippi":
    counts[ch] = counts.get(ch, 0)
    counts[ch] += 1
matrix = [[0] * 3 for _ in range(3)]
for i in range(3):
    matrix[i][i] += i + 1
(counts, matrix)
""",
    ),
    _s(
        "sort-records-multi-key",
        "data",
        """
people = [
    {"name": "Ann", "dept": "eng", "salary": 120},
    {"name": "Bob", "dept": "ops", "salary": 95},
    {"name": "Cid", "dept": "eng", "salary": 130},
]
ranked = sorted(people, key=lambda p: (p["dept"], -p["salary"]))
[p["name"] for p in ranked]
""",
    ),
    _s(
        "itertools-pipelines",
        "data",
        """
import itertools
pairs = list(itertools.combinations("abcd", 2))
chunks = [list(g) for _, g in itertools.groupby(sorted([1, 1, 2, 3, 3, 3]))]
running = list(itertools.accumulate([1, 2, 3, 4]))
(len(pairs), chunks, running, list(itertools.islice(itertools.count(10, 5), 4)))
""",
    ),
    _s(
        "dict-and-set-comprehensions",
        "data",
        """
words = ["apple", "banana", "avocado", "cherry", "blueberry"]
by_letter = {w[0]: [x for x in words if x[0] == w[0]] for w in words}
lengths = {len(w) for w in words}
(by_letter, sorted(lengths))
""",
    ),
    _s(
        "zip-unzip-transpose",
        "data",
        """
names = ["a", "b", "c"]
scores = [3, 1, 2]
pairs = sorted(zip(scores, names))
unzipped = list(zip(*pairs))
(pairs, unzipped)
""",
    ),
    _s(
        "datetime-arithmetic",
        "data",
        """
from datetime import date, datetime, timedelta
start = date(2024, 1, 31)
due = start + timedelta(days=30)
stamp = datetime(2024, 3, 1, 12, 30).isoformat()
(due.isoformat(), (due - start).days, stamp, due.strftime("%A"))
""",
    ),
    _s(
        "heap-top-k",
        "data",
        """
import heapq
numbers = [42, 7, 19, 88, 3, 56, 21]
(heapq.nlargest(3, numbers), heapq.nsmallest(2, numbers))
""",
    ),
    _s(
        "nested-json-flatten",
        "data",
        """
def flatten(obj, prefix=""):
    out = {}
    if isinstance(obj, dict):
        for key, value in obj.items():
            out.update(flatten(value, f"{prefix}{key}."))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            out.update(flatten(value, f"{prefix}{i}."))
    else:
        out[prefix[:-1]] = obj
    return out
flatten({"a": {"b": 1, "c": [2, 3]}, "d": "x"})
""",
    ),
    _s(
        "moving-average",
        "data",
        """
from collections import deque
def moving_average(values, window):
    buf, total, out = deque(), 0, []
    for v in values:
        buf.append(v)
        total += v
        if len(buf) > window:
            total -= buf.popleft()
        out.append(round(total / len(buf), 2))
    return out
moving_average([1, 2, 3, 4, 5, 6], 3)
""",
    ),
    _s(
        "namedtuple-records",
        "data",
        """
from collections import namedtuple
Point = namedtuple("Point", ["x", "y"])
points = [Point(3, 4), Point(1, 2)]
moved = [p._replace(x=p.x + 1) for p in points]
(sorted(moved), moved[0]._asdict(), Point._fields)
""",
    ),
    _s(
        "random-seeded-sample",
        "data",
        """
import random
random.seed(7)
deck = list(range(10))
random.shuffle(deck)
(deck, random.choice("abc"), random.randint(1, 6))
""",
    ),
    # -- files in the workdir --
    _s(
        "write-then-read-text",
        "files",
        """
with open("notes.txt", "w") as fh:
    fh.write("line one\\nline two\\n")
with open("notes.txt") as fh:
    lines = [line.rstrip() for line in fh]
lines
""",
    ),
    _s(
        "csv-write-read-file",
        "files",
        """
import csv
rows = [["city", "temp"], ["Oslo", "4"], ["Lima", "19"]]
with open("weather.csv", "w", newline="") as fh:
    csv.writer(fh).writerows(rows)
with open("weather.csv", newline="") as fh:
    data = list(csv.DictReader(fh))
max(data, key=lambda r: int(r["temp"]))["city"]
""",
    ),
    _s(
        "json-file-roundtrip",
        "files",
        """
import json
config = {"threshold": 0.75, "labels": ["cat", "dog"]}
with open("config.json", "w") as fh:
    json.dump(config, fh)
with open("config.json") as fh:
    loaded = json.load(fh)
loaded == config
""",
    ),
    _s(
        "append-log-lines",
        "files",
        """
for i in range(3):
    with open("run.log", "a") as fh:
        print(f"step {i}", file=fh)
with open("run.log") as fh:
    fh.read().splitlines()
""".replace("    fh.read", "    content = fh.read").rstrip()
        + "\ncontent.splitlines()\n",
    ),
    _s(
        "binary-file-and-hash",
        "files",
        """
import hashlib
with open("blob.bin", "wb") as fh:
    fh.write(bytes(range(256)))
with open("blob.bin", "rb") as fh:
    digest = hashlib.sha256(fh.read()).hexdigest()
digest[:16]
""",
    ),
    # -- algorithms --
    _s(
        "binary-search",
        "algorithms",
        """
import bisect
def search(items, target):
    lo, hi = 0, len(items) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if items[mid] == target:
            return mid
        if items[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1
items = list(range(0, 100, 3))
(search(items, 27), search(items, 28), bisect.bisect_left(items, 28))
""",
    ),
    _s(
        "quicksort",
        "algorithms",
        """
def quicksort(xs):
    if len(xs) <= 1:
        return xs
    pivot, *rest = xs
    smaller = quicksort([x for x in rest if x < pivot])
    return smaller + [pivot] + quicksort([x for x in rest if x >= pivot])
quicksort([5, 3, 8, 1, 9, 2, 7])
""",
    ),
    _s(
        "bfs-shortest-path",
        "algorithms",
        """
from collections import deque
graph = {"a": ["b", "c"], "b": ["d"], "c": ["d", "e"], "d": ["f"], "e": ["f"], "f": []}
def shortest(start, goal):
    queue, seen = deque([[start]]), {start}
    while queue:
        path = queue.popleft()
        if path[-1] == goal:
            return path
        for nxt in graph[path[-1]]:
            if nxt not in seen:
                seen.add(nxt)
                queue.append(path + [nxt])
shortest("a", "f")
""",
    ),
    _s(
        "dijkstra",
        "algorithms",
        """
import heapq
edges = {"A": {"B": 1, "C": 4}, "B": {"C": 2, "D": 5}, "C": {"D": 1}, "D": {}}
def dijkstra(src):
    dist = {src: 0}
    heap = [(0, src)]
    while heap:
        d, node = heapq.heappop(heap)
        if d > dist.get(node, float("inf")):
            continue
        for nxt, w in edges[node].items():
            nd = d + w
            if nd < dist.get(nxt, float("inf")):
                dist[nxt] = nd
                heapq.heappush(heap, (nd, nxt))
    return dist
dijkstra("A")
""",
    ),
    _s(
        "memoized-fibonacci",
        "algorithms",
        """
from functools import lru_cache
@lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
(fib(80), fib.cache_info().hits > 0)
""",
    ),
    _s(
        "permutations-and-nqueens",
        "algorithms",
        """
from itertools import permutations
def queens(n):
    return sum(1 for p in permutations(range(n))
               if len({p[i] + i for i in range(n)}) == n and len({p[i] - i for i in range(n)}) == n)
queens(6)
""",
    ),
    _s(
        "edit-distance-dp",
        "algorithms",
        """
def edit_distance(a, b):
    dp = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        dp[i][0] = i
    for j in range(len(b) + 1):
        dp[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            dp[i][j] = min(dp[i - 1][j] + 1, dp[i][j - 1] + 1, dp[i - 1][j - 1] + cost)
    return dp[-1][-1]
edit_distance("kitten", "sitting")
""",
    ),
    _s(
        "generator-pipeline",
        "algorithms",
        """
def read_numbers():
    yield from range(1, 20)
def evens(xs):
    for x in xs:
        if x % 2 == 0:
            yield x
def squares(xs):
    return (x * x for x in xs)
list(squares(evens(read_numbers())))
""",
    ),
    _s(
        "closure-counter-nonlocal",
        "algorithms",
        """
def make_counter():
    count = 0
    def increment(step=1):
        nonlocal count
        count += step
        return count
    return increment
counter = make_counter()
[counter(), counter(), counter(5)]
""",
    ),
    _s(
        "structural-pattern-matching",
        "algorithms",
        """
from dataclasses import dataclass
@dataclass
class Point:
    x: int
    y: int
def describe(obj):
    match obj:
        case Point(x=0, y=0):
            return "origin"
        case Point(x, y) if x == y:
            return f"diagonal {x}"
        case {"kind": "circle", "r": r, **rest}:
            return f"circle {r} {rest}"
        case [first, *others]:
            return f"list {first} {others}"
        case str() | bytes() as text:
            return f"text {text!r}"
        case None:
            return "none"
        case _:
            return "other"
values = (Point(0, 0), Point(2, 2), {"kind": "circle", "r": 1}, [1, 2], "hi", None, 4.5)
[describe(v) for v in values]
""",
    ),
    # -- classes and dataclasses --
    _s(
        "dataclass-inventory",
        "classes",
        """
from dataclasses import dataclass, field
@dataclass
class Item:
    name: str
    price: float
    tags: list = field(default_factory=list)
    def total(self, qty: int) -> float:
        return round(self.price * qty, 2)
stock = [Item("pen", 1.5, ["office"]), Item("mug", 7.25)]
print(stock[0])
[i.total(3) for i in stock]
""",
    ),
    _s(
        "frozen-dataclass-ordering",
        "classes",
        """
from dataclasses import dataclass, asdict
@dataclass(frozen=True, order=True)
class Version:
    major: int
    minor: int = 0
versions = sorted([Version(1, 2), Version(0, 9), Version(1, 0)])
(versions, asdict(versions[-1]))
""",
    ),
    _s(
        "class-with-dunders",
        "classes",
        """
class Vector:
    def __init__(self, x, y):
        self.x, self.y = x, y
    def __repr__(self):
        return f"Vector({self.x}, {self.y})"
    def __eq__(self, other):
        return (self.x, self.y) == (other.x, other.y)
    def __add__(self, other):
        return Vector(self.x + other.x, self.y + other.y)
    def __mul__(self, k):
        return Vector(self.x * k, self.y * k)
    def __len__(self):
        return 2
    def __iter__(self):
        yield self.x
        yield self.y
v = Vector(1, 2) + Vector(3, 4) * 2
(v, list(v), len(v), v == Vector(7, 10))
""",
    ),
    _s(
        "private-attributes-and-properties",
        "classes",
        """
class Account:
    def __init__(self, owner, balance=0):
        self._owner = owner
        self.__balance = balance
    @property
    def balance(self):
        return self.__balance
    def deposit(self, amount):
        if amount <= 0:
            raise ValueError("amount must be positive")
        self.__balance += amount
        return self
acct = Account("ann").deposit(50).deposit(25)
(acct.balance, acct._owner)
""",
    ),
    _s(
        "inheritance-and-super",
        "classes",
        """
class Shape:
    def __init__(self, name):
        self.name = name
    def area(self):
        raise NotImplementedError
    def describe(self):
        return f"{self.name} with area {self.area():.2f}"
class Circle(Shape):
    def __init__(self, r):
        super().__init__("circle")
        self.r = r
    def area(self):
        return 3.14159 * self.r ** 2
class Square(Shape):
    def __init__(self, side):
        super().__init__("square")
        self.side = side
    def area(self):
        return self.side ** 2
[s.describe() for s in (Circle(1), Square(2))]
""",
    ),
    _s(
        "context-manager-class",
        "classes",
        """
class Timer:
    def __init__(self, log):
        self.log = log
    def __enter__(self):
        self.log.append("enter")
        return self
    def __exit__(self, exc_type, exc, tb):
        self.log.append("exit:" + (exc_type.__name__ if exc_type else "ok"))
        return True
log = []
with Timer(log):
    pass
with Timer(log):
    raise KeyError("x")
log
""",
    ),
    _s(
        "enum-and-classmethods",
        "classes",
        """
from enum import Enum
class Color(Enum):
    RED = 1
    GREEN = 2
    @classmethod
    def parse(cls, text):
        return cls[text.upper()]
class Config:
    defaults = {"color": "red"}
    @staticmethod
    def keys():
        return sorted(Config.defaults)
(Color.parse("green").name, Color(1), Config.keys())
""",
    ),
    _s(
        "sorting-with-lt",
        "classes",
        """
import functools
@functools.total_ordering
class Task:
    def __init__(self, priority, title):
        self.priority, self.title = priority, title
    def __lt__(self, other):
        return self.priority < other.priority
    def __eq__(self, other):
        return self.priority == other.priority
    def __repr__(self):
        return f"Task({self.priority}, {self.title!r})"
sorted([Task(3, "c"), Task(1, "a"), Task(2, "b")]) + [Task(1, "x") >= Task(0, "y")]
""",
    ),
    _s(
        "slots-class-and-type-name",
        "classes",
        """
class Node:
    __slots__ = ("value", "next")
    def __init__(self, value, next=None):
        self.value, self.next = value, next
def to_list(node):
    out = []
    while node:
        out.append(node.value)
        node = node.next
    return out
head = Node(1, Node(2, Node(3)))
(to_list(head), type(head).__name__, head.__class__.__name__)
""",
    ),
    # -- error handling --
    _s(
        "custom-exception-hierarchy",
        "errors",
        """
class AppError(Exception):
    pass
class NotFound(AppError):
    def __init__(self, key):
        super().__init__(f"missing {key}")
        self.key = key
def lookup(d, key):
    try:
        return d[key]
    except KeyError:
        raise NotFound(key) from None
try:
    lookup({}, "x")
except AppError as e:
    result = (type(e).__name__, str(e), e.key)
result
""",
    ),
    _s(
        "try-except-else-finally",
        "errors",
        """
events = []
def parse(text):
    try:
        value = int(text)
    except ValueError as exc:
        events.append(f"bad: {exc}")
        return None
    else:
        events.append("ok")
        return value
    finally:
        events.append("done")
([parse("12"), parse("x")], events)
""",
    ),
    _s(
        "retry-with-backoff",
        "errors",
        """
attempts = []
def flaky(n):
    attempts.append(n)
    if len(attempts) < 3:
        raise ConnectionError("transient")
    return "success"
def retry(func, tries=5):
    delay = 0.01
    for i in range(tries):
        try:
            return func(i)
        except ConnectionError:
            delay *= 2
    raise RuntimeError("gave up")
(retry(flaky), attempts)
""",
    ),
    _s(
        "assert-and-validation",
        "errors",
        """
def validate(record):
    errors = []
    if not isinstance(record.get("age"), int):
        errors.append("age must be an int")
    if "@" not in record.get("email", ""):
        errors.append("email is invalid")
    return errors
try:
    assert validate({"age": 3, "email": "a@b"}) == []
    assert validate({"age": "3"}) == [], "expected failure"
except AssertionError as e:
    message = str(e)
message
""",
    ),
    _s(
        "uncaught-error-is-reported",
        "errors",
        """
values = [1, 2, 0]
[10 // v for v in values]
""",
    ),
    # -- state carried across two calls --
    _s(
        "state-variables",
        "state",
        """
totals = {"a": 1}
def bump(key):
    totals[key] = totals.get(key, 0) + 1
    return totals
""",
        """
bump("a")
bump("b")
""",
    ),
    _s(
        "state-class-instance",
        "state",
        """
class Stack:
    def __init__(self):
        self._items = []
    def push(self, x):
        self._items.append(x)
    def pop(self):
        return self._items.pop()
s = Stack()
s.push(1)
s.push(2)
""",
        """
s.push(3)
(s.pop(), s.pop(), len(s._items))
""",
    ),
    _s(
        "state-imports",
        "state",
        """
import math
from collections import Counter
seen = Counter()
""",
        """
seen.update("hello")
(math.pi > 3, seen.most_common(1))
""",
    ),
)

# Code restricted mode refuses on purpose: reason → code.
REFUSED: tuple[tuple[str, str], ...] = (
    ("eval is not available", "eval('1 + 1')"),
    ("exec is not available", "exec('x = 1')"),
    ("os.system is not in the os view", "import os\nos.system('id')"),
    ("subprocess is outside the import allowlist", "import subprocess"),
    ("files outside the workdir", "open('/etc/hostname').read()"),
    ("dunder attribute walks", "().__class__.__bases__[0].__subclasses__()"),
    ("format-string attribute walks", "'{0.__class__}'.format(1)"),
    ("globals() is not available", "globals()"),
    ("type() with three arguments", "type('X', (), {})"),
    ("modules are read-only", "import math\nmath.pi = 3"),
    ("frame objects", "def g():\n    yield 1\ng().gi_frame"),
)
