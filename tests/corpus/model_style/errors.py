# Model-style error-handling snippets.

# %% try-except-value-error
def parse_int(s: str, default: int = 0) -> int:
    try:
        return int(s)
    except ValueError:
        return default

print(parse_int("42"), parse_int("forty-two"))
assert parse_int("42") == 42 and parse_int("x", -1) == -1

# %% custom-exception
class ValidationError(Exception):
    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field

def validate(user: dict) -> None:
    if "@" not in user.get("email", ""):
        raise ValidationError("email", "missing @")

try:
    validate({"email": "nope"})
except ValidationError as err:
    print("invalid:", err)
    assert err.field == "email"

# %% finally-cleanup
events = []

def risky() -> None:
    try:
        events.append("start")
        raise RuntimeError("boom")
    finally:
        events.append("cleanup")

try:
    risky()
except RuntimeError as e:
    events.append(str(e))
print(events)
assert events == ["start", "cleanup", "boom"]

# %% file-not-found
try:
    with open("does_not_exist.txt") as f:
        f.read()
except FileNotFoundError as exc:
    print("missing file:", exc.filename)
    assert exc.filename == "does_not_exist.txt"

# %% key-error-default
inventory = {"apples": 3}
try:
    pears = inventory["pears"]
except KeyError as missing:
    pears = 0
    print("no key", missing)
assert pears == 0 and inventory.get("pears", 0) == 0

# %% exception-chaining
class ConfigError(Exception):
    pass

def load(raw: str) -> int:
    try:
        return int(raw)
    except ValueError as exc:
        raise ConfigError(f"bad value {raw!r}") from exc

try:
    load("abc")
except ConfigError as err:
    print(err, "caused by", type(err.__cause__).__name__)
    assert isinstance(err.__cause__, ValueError)

# %% traceback-format
import traceback

try:
    1 / 0
except ZeroDivisionError:
    text = traceback.format_exc()
print(text.splitlines()[-1])
assert "ZeroDivisionError" in text

# %% contextlib-suppress
import contextlib
import os

with contextlib.suppress(FileNotFoundError):
    os.remove("never_created.tmp")
print("nothing to remove, no error")
assert not os.path.exists("never_created.tmp")

# %% retry-loop
attempts = 0

def flaky() -> str:
    global attempts
    attempts += 1
    if attempts < 3:
        raise ConnectionError("transient")
    return "ok"

for attempt in range(5):
    try:
        result = flaky()
        break
    except ConnectionError:
        continue
print(result, "after", attempts, "attempts")
assert result == "ok" and attempts == 3

# %% else-clause
def safe_div(a: float, b: float) -> str:
    try:
        q = a / b
    except ZeroDivisionError:
        return "undefined"
    else:
        return f"{q:.2f}"

print(safe_div(1, 3), safe_div(1, 0))
assert safe_div(1, 4) == "0.25" and safe_div(1, 0) == "undefined"

# %% warnings-capture
import warnings

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    warnings.warn("deprecated thing", DeprecationWarning)
print(len(caught), caught[0].category.__name__)
assert issubclass(caught[0].category, DeprecationWarning)

# %% assert-type-name
values = [1, "two", 3.0, None]
names = [type(v).__name__ for v in values]
print(names)
assert names == ["int", "str", "float", "NoneType"]

# %% class-name-in-message
class Shape:
    def describe(self) -> str:
        return f"{self.__class__.__name__} with area {self.area():.1f}"

class Square(Shape):
    def __init__(self, side: float) -> None:
        self.side = side

    def area(self) -> float:
        return self.side ** 2

print(Square(3).describe())
assert Square(3).describe() == "Square with area 9.0"

# %% exception-group-plain
errors = []
for item in ["1", "x", "3", "y"]:
    try:
        int(item)
    except ValueError as exc:
        errors.append(str(exc))
print(f"{len(errors)} bad items")
assert len(errors) == 2
