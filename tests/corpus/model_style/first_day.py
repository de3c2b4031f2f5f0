# Idioms a first day's model code writes that the default pack once refused natively (issue 33):
# error reports, a standard-library MAC, names that only look like dunders, a consumer loop that
# ends by cancellation, a script that ends with sys.exit(0), timing with a function.

# %% traceback-format-exc
import traceback

try:
    1 / 0
except ZeroDivisionError:
    report = traceback.format_exc()
print(report.splitlines()[-1])
assert "ZeroDivisionError" in report

# %% traceback-extract-tb
import traceback

def fails() -> None:
    raise ValueError("bad row")

try:
    fails()
except ValueError as err:
    frames = traceback.extract_tb(err.__traceback__)
    print([f.name for f in frames])
    assert frames[-1].name == "fails"

# %% sys-exc-info
import sys

try:
    int("forty-two")
except ValueError:
    kind, value, _ = sys.exc_info()
    print(kind.__name__, value)
    assert kind is ValueError

# %% exception-cause-chain
try:
    try:
        {}["missing"]
    except KeyError as exc:
        raise RuntimeError("lookup failed") from exc
except RuntimeError as err:
    print(repr(err.__cause__))
    assert isinstance(err.__cause__, KeyError)

# %% object-dict-dump
import json

class Order:
    def __init__(self, sku: str, qty: int) -> None:
        self.sku = sku
        self.qty = qty

    def __repr__(self) -> str:
        return f"Order({self.__dict__})"

order = Order("A-1", 3)
print(order, json.dumps(order.__dict__))
assert json.loads(json.dumps(order.__dict__)) == {"sku": "A-1", "qty": 3}

# %% hmac-signature
import hashlib
import hmac

signature = hmac.new(b"secret", b"payload", hashlib.sha256).hexdigest()
print(signature[:16])
assert hmac.compare_digest(signature, hmac.new(b"secret", b"payload", "sha256").hexdigest())

# %% logger-for-main
import logging

log = logging.getLogger("__main__")
log.setLevel(logging.INFO)
print(log.name)
assert log.name == "__main__"

# %% dunder-looking-strings
files = ["__init__.py", "model.py"]
print([name for name in files if name != "__init__.py"], "__name__".strip("_"))
assert "__init__.py" in files

# %% asyncio-consumer-cancelled
import asyncio

async def consumer(queue: asyncio.Queue, seen: list) -> None:
    while True:
        item = await queue.get()
        seen.append(item)
        queue.task_done()

async def main() -> list:
    queue: asyncio.Queue = asyncio.Queue()
    seen: list = []
    task = asyncio.create_task(consumer(queue, seen))
    for item in range(3):
        await queue.put(item)
    await queue.join()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    return seen

print(asyncio.run(main()))
assert asyncio.run(main()) == [0, 1, 2]

# %% script-ends-with-sys-exit
import sys

def main() -> int:
    print("report written")
    return 0

if __name__ == "__main__":
    sys.exit(main())

# %% timeit-a-function
import timeit

def work() -> int:
    return sum(range(1000))

seconds = timeit.timeit(work, number=20)
best = min(timeit.repeat(lambda: work(), repeat=3, number=5))
print(seconds >= 0, best >= 0)
assert seconds >= 0 and best >= 0
