# Model-style snippets with threads and asyncio.

# %% thread-pool-map
from concurrent.futures import ThreadPoolExecutor

def square(n: int) -> int:
    return n * n

with ThreadPoolExecutor(max_workers=4) as pool:
    results = list(pool.map(square, range(10)))
print(results)
assert results == [n * n for n in range(10)]

# %% threading-lock-counter
import threading

counter = 0
lock = threading.Lock()

def work() -> None:
    global counter
    for _ in range(1000):
        with lock:
            counter += 1

threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("counter:", counter)
assert counter == 4000

# %% asyncio-gather
import asyncio

async def fetch(i: int) -> int:
    await asyncio.sleep(0.01)
    return i * 10

async def main() -> list[int]:
    return await asyncio.gather(*(fetch(i) for i in range(5)))

results = asyncio.run(main())
print(results)
assert results == [0, 10, 20, 30, 40]

# %% asyncio-queue
import asyncio

async def producer(q: asyncio.Queue) -> None:
    for i in range(5):
        await q.put(i)
    await q.put(None)

async def consumer(q: asyncio.Queue) -> int:
    total = 0
    while (item := await q.get()) is not None:
        total += item
    return total

async def main() -> int:
    q: asyncio.Queue = asyncio.Queue()
    _, total = await asyncio.gather(producer(q), consumer(q))
    return total

print(asyncio.run(main()))
assert asyncio.run(main()) == 10

# %% asyncio-timeout
import asyncio

async def slow() -> str:
    await asyncio.sleep(5)
    return "done"

async def main() -> str:
    try:
        return await asyncio.wait_for(slow(), timeout=0.05)
    except asyncio.TimeoutError:
        return "timed out"

outcome = asyncio.run(main())
print(outcome)
assert outcome == "timed out"

# %% futures-as-completed
from concurrent.futures import ThreadPoolExecutor, as_completed

def word_len(w: str) -> tuple[str, int]:
    return w, len(w)

words = ["alpha", "be", "gamma"]
with ThreadPoolExecutor() as ex:
    futures = [ex.submit(word_len, w) for w in words]
    lengths = dict(f.result() for f in as_completed(futures))
print(lengths)
assert lengths == {"alpha": 5, "be": 2, "gamma": 5}

# %% queue-worker-threads
import queue
import threading

jobs: queue.Queue = queue.Queue()
results: list[int] = []
results_lock = threading.Lock()

def worker() -> None:
    while True:
        item = jobs.get()
        if item is None:
            break
        with results_lock:
            results.append(item * 2)
        jobs.task_done()

threads = [threading.Thread(target=worker) for _ in range(3)]
for t in threads:
    t.start()
for i in range(9):
    jobs.put(i)
jobs.join()
for _ in threads:
    jobs.put(None)
for t in threads:
    t.join()
print(sorted(results))
assert sorted(results) == [i * 2 for i in range(9)]

# %% asyncio-semaphore
import asyncio

async def limited(sem: asyncio.Semaphore, i: int, active: list[int], peak: list[int]) -> None:
    async with sem:
        active.append(i)
        peak.append(len(active))
        await asyncio.sleep(0.005)
        active.remove(i)

async def main() -> int:
    sem = asyncio.Semaphore(2)
    active: list[int] = []
    peak: list[int] = []
    await asyncio.gather(*(limited(sem, i, active, peak) for i in range(6)))
    return max(peak)

print("max concurrency:", asyncio.run(main()))
assert asyncio.run(main()) <= 2

# %% threading-event
import threading

ready = threading.Event()
box: dict[str, str] = {}

def setter() -> None:
    box["value"] = "set by thread"
    ready.set()

threading.Thread(target=setter).start()
assert ready.wait(timeout=5)
print(box["value"])
assert box["value"] == "set by thread"

# %% async-generator
import asyncio

async def ticker(n: int):
    for i in range(n):
        await asyncio.sleep(0)
        yield i

async def collect() -> list[int]:
    return [i async for i in ticker(4)]

print(asyncio.run(collect()))
assert asyncio.run(collect()) == [0, 1, 2, 3]
