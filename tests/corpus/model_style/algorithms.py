# Model-style algorithm snippets.

# %% fibonacci-memo
from functools import lru_cache

@lru_cache(maxsize=None)
def fib(n: int) -> int:
    return n if n < 2 else fib(n - 1) + fib(n - 2)

print([fib(i) for i in range(10)])
assert fib(50) == 12586269025

# %% binary-search
from bisect import bisect_left

def contains(sorted_items: list[int], target: int) -> bool:
    i = bisect_left(sorted_items, target)
    return i < len(sorted_items) and sorted_items[i] == target

data = list(range(0, 100, 3))
print(contains(data, 42), contains(data, 43))
assert contains(data, 42) and not contains(data, 43)

# %% dijkstra
import heapq

graph = {"A": {"B": 1, "C": 4}, "B": {"C": 2, "D": 5}, "C": {"D": 1}, "D": {}}

def shortest(start: str) -> dict[str, int]:
    dist = {start: 0}
    heap = [(0, start)]
    while heap:
        d, node = heapq.heappop(heap)
        if d > dist.get(node, float("inf")):
            continue
        for nxt, w in graph[node].items():
            nd = d + w
            if nd < dist.get(nxt, float("inf")):
                dist[nxt] = nd
                heapq.heappush(heap, (nd, nxt))
    return dist

print(shortest("A"))
assert shortest("A") == {"A": 0, "B": 1, "C": 3, "D": 4}

# %% bfs-grid
from collections import deque

grid = ["..#", ".##", "..."]

def steps_to_exit() -> int:
    rows, cols = len(grid), len(grid[0])
    queue = deque([(0, 0, 0)])
    seen = {(0, 0)}
    while queue:
        r, c, d = queue.popleft()
        if (r, c) == (rows - 1, cols - 1):
            return d
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            nr, nc = r + dr, c + dc
            if 0 <= nr < rows and 0 <= nc < cols and grid[nr][nc] == "." and (nr, nc) not in seen:
                seen.add((nr, nc))
                queue.append((nr, nc, d + 1))
    return -1

print(steps_to_exit())
assert steps_to_exit() == 4

# %% quicksort
def quicksort(items):
    if len(items) <= 1:
        return items
    pivot, *rest = items
    return quicksort([x for x in rest if x < pivot]) + [pivot] + quicksort([x for x in rest if x >= pivot])

data = [5, 3, 8, 1, 9, 2, 7]
print(quicksort(data))
assert quicksort(data) == sorted(data)

# %% primes-sieve
def sieve(n: int) -> list[int]:
    is_prime = [True] * (n + 1)
    is_prime[0:2] = [False, False]
    for i in range(2, int(n ** 0.5) + 1):
        if is_prime[i]:
            is_prime[i * i :: i] = [False] * len(is_prime[i * i :: i])
    return [i for i, p in enumerate(is_prime) if p]

primes = sieve(50)
print(primes)
assert primes[-1] == 47 and len(primes) == 15

# %% topological-sort
from graphlib import TopologicalSorter

deps = {"deploy": {"test", "build"}, "test": {"build"}, "build": {"fetch"}}
order = list(TopologicalSorter(deps).static_order())
print(order)
assert order.index("fetch") < order.index("build") < order.index("test") < order.index("deploy")

# %% permutations-combinations
from itertools import combinations, permutations

print(list(combinations("abc", 2)))
assert len(list(permutations(range(4)))) == 24
assert len(list(combinations(range(6), 3))) == 20

# %% dynamic-programming-lcs
def lcs(a: str, b: str) -> int:
    dp = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, ca in enumerate(a, 1):
        for j, cb in enumerate(b, 1):
            dp[i][j] = dp[i - 1][j - 1] + 1 if ca == cb else max(dp[i - 1][j], dp[i][j - 1])
    return dp[-1][-1]

print(lcs("ABCBDAB", "BDCABA"))
assert lcs("ABCBDAB", "BDCABA") == 4

# %% knapsack
def knapsack(items: list[tuple[int, int]], capacity: int) -> int:
    best = [0] * (capacity + 1)
    for weight, value in items:
        for c in range(capacity, weight - 1, -1):
            best[c] = max(best[c], best[c - weight] + value)
    return best[capacity]

result = knapsack([(1, 1), (3, 4), (4, 5), (5, 7)], 7)
print(result)
assert result == 9

# %% matrix-multiply-pure
def matmul(a, b):
    return [[sum(x * y for x, y in zip(row, col)) for col in zip(*b)] for row in a]

m = matmul([[1, 2], [3, 4]], [[5, 6], [7, 8]])
print(m)
assert m == [[19, 22], [43, 50]]

# %% union-find
class DisjointSet:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        self.parent[self.find(a)] = self.find(b)

ds = DisjointSet(6)
for a, b in [(0, 1), (1, 2), (3, 4)]:
    ds.union(a, b)
groups = len({ds.find(i) for i in range(6)})
print("groups:", groups)
assert groups == 3

# %% gcd-lcm
import math
from functools import reduce

nums = [12, 18, 30]
g = reduce(math.gcd, nums)
l = reduce(lambda a, b: a * b // math.gcd(a, b), nums)
print(g, l)
assert (g, l) == (6, 180)

# %% roman-numerals
def to_roman(n: int) -> str:
    table = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
             (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
    out = []
    for value, symbol in table:
        while n >= value:
            out.append(symbol)
            n -= value
    return "".join(out)

print(to_roman(1994))
assert to_roman(1994) == "MCMXCIV"

# %% generator-pipeline
def read_numbers():
    yield from range(1, 21)

def evens(xs):
    return (x for x in xs if x % 2 == 0)

def squares(xs):
    for x in xs:
        yield x * x

result = sum(squares(evens(read_numbers())))
print(result)
assert result == 1540

# %% dataclass-sorting
from dataclasses import dataclass, field

@dataclass(order=True)
class Task:
    priority: int
    name: str = field(compare=False)

tasks = [Task(3, "write"), Task(1, "plan"), Task(2, "build")]
print([t.name for t in sorted(tasks)])
assert [t.name for t in sorted(tasks)] == ["plan", "build", "write"]
