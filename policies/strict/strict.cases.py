# Rules the strict pack adds or tightens.

# case: pure computation is fine
import math, itertools, functools  # ok: SX201
print(math.comb(10, 3), list(itertools.accumulate([1, 2, 3])), functools.reduce(max, [3, 9, 2]))  # ok: SX306

# case: modules the default pack allows but strict does not
import pathlib  # expect: SX201
import random  # expect: SX201
import time  # expect: SX201

# case: files, the clock and OS randomness
open("notes.txt", "w")  # expect: SX306
text = input()  # expect: SX306

# case: forbidden syntax kinds
def gen():
    yield 1  # expect: SX405
counter = 0
def bump():
    global counter  # expect: SX405
    counter += 1
async def fetch():  # expect: SX405
    await other()  # expect: SX405

# case: comprehensions are still fine
squares = {n: n * n for n in range(10)}  # ok: SX405
print(sum(x for x in squares.values()))  # ok: SX405

# case: a lower CPU threshold  # expect: SX501
for i in range(10**5):
    for j in range(10**5):
        pass

# case: under the lower CPU threshold  # ok: SX501
for i in range(10**4):
    for j in range(10**3):
        pass

# case: a lower memory threshold  # expect: SX503
table = [0] * 10**8

# case: under the lower memory threshold  # ok: SX503
table = [0] * 10**6

# case: private and dunder attributes are refused as the restricted mode refuses them
class Counter:
    def __init__(self):
        self._count = 0  # expect: SX406
    def bump(self):
        self.count = getattr(self, "count", 0) + 1  # ok: SX406
        return self.count
Counter().bump()
x = ().__class__  # expect: SX401, SX406
d = {"_key": 1}
print(d["_key"])  # ok: SX406

# case: format templates the checker cannot read are refused
import json
template = json.loads('"{0}"')
template.format(1)  # expect: SX407
"{0:>4}".format(1)  # ok: SX407

# case: guard-shadowing names are refused wherever they are bound
def f(*, _write_=None):  # expect: SX408
    pass
import math as _getattr_  # expect: SX408
for _print_ in [1]:  # expect: SX408
    pass
try:
    pass
except Exception as _getitem_:  # expect: SX408
    pass
for _ in range(2):  # ok: SX408
    pass
class Point:
    def __init__(self, x):  # ok: SX408
        self.x = x

# case: module mutation is refused in strict mode
import math
math.pi = 3  # expect: SX409
value = math.pi  # ok: SX409
import collections.abc
collections.abc.Mapping.register(list)  # expect: SX409
