# Estimate thresholds (SX5xx). Estimate findings have no position: they belong to a case's first line.

# case: an endless loop  # expect: SX502
while True:
    x = 1

# case: a loop with a reachable break is fine  # ok: SX502
import random
while True:
    if random.random() < 0.5:
        break

# case: endless iterator  # expect: SX502
import itertools
for i in itertools.count():
    pass

# case: unconditional recursion  # expect: SX502
def forever(n):
    return forever(n + 1)
forever(0)

# case: ordinary recursion is fine  # ok: SX502, SX501
def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)
print(fib(20))

# case: a trillion iterations  # expect: SX501
for i in range(10**6):
    for j in range(10**6):
        pass

# case: loop-heavy ordinary code is fine  # ok: SX501, SX504
total = 0
for i in range(1000):
    for j in range(1000):
        total += i * j
print(total)

# case: nested comprehension products  # expect: SX501
grid = sum(1 for a in range(10**5) for b in range(10**5) for c in range(10))

# case: huge repetition  # expect: SX503
zeros = [0] * 10**10

# case: huge string  # expect: SX503
s = "a" * (10**12)

# case: big power computed by size only  # expect: SX503
big = 2 ** 10 ** 10

# case: big constant named once  # expect: SX503
n = 10**11
buf = bytearray(n)

# case: factorial of a large constant  # expect: SX503
import math
math.factorial(10**9)

# case: appends in a huge loop  # expect: SX501, SX503
acc = []
for i in range(10**10):
    acc.append(i)

# case: moderate allocations are fine  # ok: SX503
table = [0] * 10**6
text = "-" * 80
print(len(table), text, 2 ** 64, math_ok := 10 ** 100)

# case: print-heavy code is fine  # ok: SX504
for i in range(10**5):
    print("line", i)

# case: printing gigabytes  # expect: SX501, SX504
for i in range(10**10):
    print("x" * 10)

# case: more tool calls than the session budget holds  # expect: SX510
for i in range(1000):
    fetch_url(url="https://example.org")  # expect: SX602

# case: a few tool calls are fine  # ok: SX510
for i in range(3):
    fetch_url(url="https://example.org")  # ok: SX602

# case: endless generators are fine: the consumer decides  # ok: SX502
import itertools
def naturals():
    n = 0
    while True:
        yield n
        n += 1
def evens():
    for i in itertools.count():
        yield 2 * i
print(list(itertools.islice(naturals(), 5)), next(evens()))

# case: an endless iterator consumed by a C function  # expect: SX502
import itertools
total = sum(itertools.count())

# case: membership in an endless iterator scans it in C  # expect: SX502
import itertools
found = -1 in itertools.count()

# case: a billion repeats materialised  # expect: SX503
import itertools
zeros = list(itertools.repeat(0, 10**9))

# case: a trillion repeats summed  # expect: SX501
from itertools import repeat
total = sum(repeat(1, times=10**12))

# case: small repeats, membership in a range and an islice of count are fine  # ok: SX501, SX502, SX503
import itertools
row = list(itertools.repeat("-", 40))
hit = 10**11 in range(10**12)
first = list(itertools.islice(itertools.count(), 5))

# case: a consumer loop that ends when its task is cancelled  # ok: SX502
import asyncio
async def consumer(queue):
    while True:
        item = await queue.get()
        print(item)
        queue.task_done()
async def main():
    queue = asyncio.Queue()
    task = asyncio.create_task(consumer(queue))
    await queue.put(1)
    await queue.join()
    task.cancel()
asyncio.run(main())

# case: an async loop with nothing awaited still never ends  # expect: SX502
async def spin():
    while True:
        pass
