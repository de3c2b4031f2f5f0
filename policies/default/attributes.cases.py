# Attribute and introspection rules of the default pack.

# case: the classic subclass walk
classes = ().__class__.__base__.__subclasses__()  # expect: SX401

# case: function globals to builtins
def f():
    pass
b = f.__globals__["__builtins__"]  # expect: SX401

# case: ordinary dunder use is fine
class Account:
    def __init__(self, owner):
        super().__init__()  # ok: SX401
        self.owner = owner
    def __repr__(self):
        return f"Account({self.owner!r})"
print(Account.__name__, Account.__doc__)  # ok: SX401
if __name__ == "__main__":  # ok: SX404
    print(repr(Account("ann")))

# case: str.format attribute fields walk attributes too
"{0.__class__.__base__}".format(1)  # expect: SX401
"{0.__init__.__globals__}".format(print)  # expect: SX401
"{x.__class__}".format_map({"x": 1})  # expect: SX401
str.format("{0.__class__}", 1)  # expect: SX401
("{0._" + "_class__}").format(1)  # expect: SX401
"{0.real}, {0:>10}".format(1)  # ok: SX401

# case: f-strings with format specs and conversions are ordinary expressions
x = 3.14159
print(f"{x:.2f} {x!r:>10} {x:{'>'}{10}}")  # ok: SX401
f"{x.__class__}"  # expect: SX401
f"{x:{x.__class__}}"  # expect: SX401

# case: string subscripts of namespace-like objects
def g():
    pass
g.__globals__  # expect: SX401
d = {}
d["__builtins__"]  # expect: SX401
d["key"]  # ok: SX401

# case: generator and frame walks
gen = (i for i in range(3))
frame = gen.gi_frame  # expect: SX402
caller = frame.f_back  # expect: SX402
caller.f_globals  # expect: SX402

# case: traceback and coroutine frames
try:
    1 / 0
except ZeroDivisionError as exc:
    tb = exc.__traceback__  # ok: SX412
    tb.tb_frame  # expect: SX402
async def co():
    pass
c = co()
c.cr_frame  # expect: SX402

# case: attribute names that merely look alike are fine
class Frame:
    back = None
    globals_ = None
frame = Frame()
print(frame.back, frame.globals_)  # ok: SX402

# case: re-exported modules and private names of allowed modules
# mode: restricted
import random, json, pathlib, typing  # ok: SX201
random._random  # expect: SX403
json.decoder  # ok: SX403
pathlib.importlib  # expect: SX403
typing.types  # expect: SX403
json.__loader__  # expect: SX401, SX403
print(json.__name__, random.random())  # ok: SX403

# case: re-exports through a bound module alias
# mode: restricted
import pathlib  # ok: SX201
p = pathlib
p.inspect  # expect: SX403
from pathlib import Path  # ok: SX201
Path("x").exists()  # ok: SX403

# case: natively, a module the code may import anyway is no hazard to reach through another
import pathlib, logging
pathlib.os.path.join("a", "b")  # ok: SX403
logging.handlers.socket  # expect: SX403

# case: the builtins namespace by name
__builtins__  # expect: SX404
b = __builtins__["eval"]  # expect: SX404
__loader__.load_module("os")  # expect: SX404
__spec__  # expect: SX404
print(__name__)  # ok: SX404

# case: decorators, defaults and walrus reach attributes too
def deco(fn):
    return fn
@deco
def h(x=().__class__):  # expect: SX401
    return x
if (cls := ().__class__):  # expect: SX401
    pass

# case: nested comprehensions and lambdas
subs = [c for c in [b for b in ().__class__.__bases__]]  # expect: SX401
pick = lambda o: o.__class__  # expect: SX401

# case: code objects and closures
def f():
    return 1
f.__code__  # expect: SX401
f.__code__.co_consts  # expect: SX401, SX402
f.__closure__  # expect: SX401

# case: pattern matching reads attributes without an attribute node
match ():
    case object(__class__=cls):  # expect: SX401
        print(cls)
match 3:
    case int(real=r):  # ok: SX401
        print(r)

# case: Formatter methods walk format fields too
import string
string.Formatter().vformat("{0.__class__}", (1,), {})  # expect: SX401
string.Formatter().get_field("0.__class__.__base__", (1,), {})  # expect: SX401
string.Formatter().format("{0.real}", 1)  # ok: SX401

# case: templates computed at run time are recorded, not refused
import json
template = json.loads('"{0} and {1}"')
print(template.format(1, 2))  # expect: SX407
print("{} and {}".format(1, 2))  # ok: SX407

# case: a format method taken without calling it still walks its template
f = "{0.__class__}".format  # expect: SX401
f(1)
g = "{0} {1}".format  # ok: SX401, SX407

# case: mutating imported modules is recorded
import math, json, datetime
math.pi = 3  # expect: SX409
del math.sqrt  # expect: SX409
setattr(math, "tau", 6)  # expect: SX409
json.JSONEncoder.item_separator = ";"  # expect: SX409
datetime.date.today = None  # expect: SX409
local = {"pi": math.pi}  # ok: SX409
class Box:
    pass
box = Box()
box.value = 1  # ok: SX409
setattr(box, "other", 2)  # ok: SX409

# case: decorators that patch a library class or function in place
import dataclasses, functools, json
dataclasses.dataclass(json.JSONEncoder)  # expect: SX409
functools.total_ordering(json.JSONDecoder)  # expect: SX409
functools.wraps(len)(json.dumps)  # expect: SX409
@dataclasses.dataclass  # ok: SX409
class Row:
    name: str
wrapped = functools.wraps(len)(lambda x: 0)  # ok: SX409

# case: item stores into shared library tables and registering into library ABCs
import abc, collections, collections.abc, textwrap
textwrap.TextWrapper.unicode_whitespace_trans[32] = 88  # expect: SX409
table = textwrap.TextWrapper.unicode_whitespace_trans
table[9] = 88  # expect: SX409
collections.abc.Mapping.register(list)  # expect: SX409
from numbers import Integral
Integral.register(str)  # expect: SX409
class Shape(abc.ABC):
    pass
Shape.register(int)  # ok: SX409
counts = collections.Counter()
counts.update("abc")  # ok: SX409
scratch = {}
scratch["x"] = 1  # ok: SX409

# case: a module carried where the checks cannot follow it
import pathlib, math
holder = {"m": pathlib}  # expect: SX410
holder["m"].os.system("id")
match pathlib:  # expect: SX410
    case object(os=o):
        o.system("id")
(alias := pathlib).Path  # expect: SX410
def use(mod=pathlib):  # expect: SX410
    return mod.Path
for each in [pathlib]:  # expect: SX410
    each.Path
first, second = pathlib, 1  # expect: SX410
class Holder:
    m = pathlib  # expect: SX410
helper = lambda: pathlib  # expect: SX410
sorted([1], key=math)  # expect: SX410

# case: modules read, printed and rebound are followed
import math, json
print(math, dir(json))  # ok: SX410
m = math  # ok: SX410
print(m.pi, math.sqrt(4), getattr(json, "dumps")([1]))  # ok: SX410
math  # ok: SX410

# SX411: attribute names as data, passed into calls.
import enum
import statistics


def _probe():
    pass


functools.wraps(statistics.mean, updated=("__globals__",))(_probe)  # expect: SX411
functools.wraps(statistics.mean, ("__module__",), ["__dict__", "__code__"])  # expect: SX411
functools.partial(print, "__class__")  # expect: SX411
print("__glo" + "bals__")  # expect: SX411
Color = enum.Enum("Color", "RED")
functools.reduce(getattr, ["_convert_"], Color)  # expect: SX303
sorted(["a"], key=len)  # ok: SX411
record = {"_id": 1}
print(record.get("_id"), "_private")  # ok: SX411
functools.wraps(statistics.mean)(_probe)  # ok: SX411

# case: reading a class's name through __class__ binds only a string
class Shape:
    def describe(self):
        return self.__class__.__name__ + "/" + self.__class__.__qualname__  # ok: SX401
kind = Shape().__class__  # expect: SX401
base = Shape().__class__.__base__  # expect: SX401
walk = ().__class__.__name__.__class__  # expect: SX401

# case: in restricted mode too: the runtime's __class__ is type(x), never a metaclass
# mode: restricted
class Shape:
    pass
name = Shape().__class__.__name__  # ok: SX401
kind = Shape().__class__  # expect: SX401
mro = Shape().__class__.__mro__  # expect: SX401

# case: the interpreter's internals stay out of reach in native mode
import sys, threading
print(sys.version, sys.argv, sys.platform)  # ok: SX310
sys.stdout.write("x\n")  # ok: SX310
frame = sys._getframe(0)  # expect: SX310, SX403
loaded = sys.modules["json"]  # expect: SX310
sys.settrace(None)  # expect: SX310
threading.settrace(print)  # expect: SX310
hook = sys.meta_path  # expect: SX310

# case: the data stack runs natively, without unpickling or string evaluation
import numpy as np, pandas as pd
frame = pd.DataFrame({"a": [1, 2]})  # ok: SX307
frame.to_csv("a.csv")  # ok: SX307
pd.read_pickle("frame.pkl")  # expect: SX307
pd.eval("1 + 1")  # expect: SX307
view = np.lib.stride_tricks.as_strided(np.zeros(1), shape=(10**6,))  # expect: SX310

# case: error reports and object dumps run natively
import json
import sys
import traceback
class Point:
    def __init__(self):
        self.x = 1
print(json.dumps(Point().__dict__))  # ok: SX412
try:
    int("x")
except ValueError as err:
    for frame_summary in traceback.extract_tb(err.__traceback__):  # ok: SX412
        print(frame_summary.lineno)
    kind, value, _ = sys.exc_info()  # ok: SX310

# case: outside native mode they stay refused
# mode: restricted
class Box:
    pass
print(Box().__dict__)  # expect: SX412
try:
    1 / 0
except ZeroDivisionError as exc:
    print(exc.__traceback__)  # expect: SX412

# case: names that are only data run natively; names the attribute rules deny do not
import functools
import logging
log = logging.getLogger("__main__")  # ok: SX411
print("__init__", "__name__")  # ok: SX411
functools.partial(print, "__globals__")  # expect: SX411

# case: outside native mode every dunder or private helper name counts
# mode: restricted
import enum
import functools
import logging
log = logging.getLogger("__main__")  # expect: SX411
Color = enum.Enum("Color", "RED")
functools.reduce(getattr, ["_convert_"], Color)  # expect: SX303, SX411

