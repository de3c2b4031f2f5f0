# Model-style snippets: maths, statistics, typing, objects and introspection models use.

# %% statistics-basic
import statistics

data = [2, 4, 4, 5, 7, 9, 10]
print(statistics.mean(data), statistics.median(data), statistics.mode(data))
assert statistics.median(data) == 5 and statistics.mode(data) == 4

# %% decimal-money
from decimal import ROUND_HALF_UP, Decimal, localcontext

price = Decimal("19.99")
qty = 3
total = (price * qty).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
with localcontext() as ctx:
    ctx.prec = 5
    third = Decimal(1) / Decimal(3)
print(total, third)
assert total == Decimal("59.97") and str(third) == "0.33333"

# %% fractions-exact
from fractions import Fraction

parts = [Fraction(1, 3), Fraction(1, 6), Fraction(1, 2)]
print(sum(parts))
assert sum(parts) == 1

# %% random-seeded-choice
import random

random.seed(7)
deck = [f"{r}{s}" for r in "A23456789TJQK" for s in "shdc"]
random.shuffle(deck)
hand = deck[:5]
print(hand)
assert len(set(hand)) == 5

# %% typing-protocol
from typing import Protocol


class HasArea(Protocol):
    def area(self) -> float: ...


class Circle:
    def __init__(self, r: float) -> None:
        self.r = r

    def area(self) -> float:
        return 3.14159 * self.r ** 2


def total_area(shapes: list[HasArea]) -> float:
    return sum(s.area() for s in shapes)

print(round(total_area([Circle(1), Circle(2)]), 3))
assert round(total_area([Circle(1)]), 5) == 3.14159

# %% enum-states
from enum import Enum, auto

class Status(Enum):
    PENDING = auto()
    RUNNING = auto()
    DONE = auto()

transitions = {Status.PENDING: Status.RUNNING, Status.RUNNING: Status.DONE}
state = Status.PENDING
while state in transitions:
    state = transitions[state]
print(state.name)
assert state is Status.DONE

# %% vars-of-object
class Point:
    def __init__(self, x: int, y: int) -> None:
        self.x = x
        self.y = y

p = Point(3, 4)
print(vars(p))
assert vars(p) == {"x": 3, "y": 4}

# %% dir-public-methods
class Greeter:
    def hello(self) -> str:
        return "hi"

    def bye(self) -> str:
        return "bye"

methods = [name for name in dir(Greeter) if not name.startswith("_")]
print(methods)
assert methods == ["bye", "hello"]

# %% namedtuple-records
from collections import namedtuple

Row = namedtuple("Row", ["name", "score"])
rows = [Row("a", 3), Row("b", 9), Row("c", 5)]
best = max(rows, key=lambda r: r.score)
print(best)
assert best.name == "b" and best._asdict() == {"name": "b", "score": 9}

# %% math-geometry
import math

def distance(p, q):
    return math.hypot(q[0] - p[0], q[1] - p[1])

print(distance((0, 0), (3, 4)), math.degrees(math.atan2(1, 1)))
assert distance((0, 0), (3, 4)) == 5.0
assert math.isclose(math.degrees(math.atan2(1, 1)), 45.0)

# %% main-guard
def main() -> int:
    values = [3, 1, 2]
    print("sorted:", sorted(values))
    return sum(values)

if __name__ == "__main__":
    result = main()
    assert result == 6

# %% itertools-groupby
from itertools import groupby

words = sorted(["apple", "avocado", "banana", "blueberry", "cherry"])
by_letter = {k: list(g) for k, g in groupby(words, key=lambda w: w[0])}
print(by_letter)
assert by_letter["b"] == ["banana", "blueberry"]

# %% uuid-and-secrets
import secrets
import uuid

token = secrets.token_hex(8)
ident = uuid.uuid4()
print(len(token), ident.version)
assert len(token) == 16 and ident.version == 4

# %% operator-itemgetter
from operator import itemgetter

people = [("ana", 31), ("ben", 25), ("cy", 40)]
by_age = sorted(people, key=itemgetter(1))
print(by_age)
assert [p[0] for p in by_age] == ["ben", "ana", "cy"]

# %% array-module
from array import array

arr = array("d", [1.5, 2.5, 3.0])
arr.append(4.0)
print(arr.tolist(), arr.itemsize)
assert sum(arr) == 11.0

# %% copy-deepcopy
import copy

config = {"layers": [1, 2], "name": "base"}
variant = copy.deepcopy(config)
variant["layers"].append(3)
print(config, variant)
assert config["layers"] == [1, 2] and variant["layers"] == [1, 2, 3]
