# Call and builtin rules of the default pack.

# case: code execution builtins
eval("1 + 1")  # expect: SX301
exec("x = 1")  # expect: SX301
compile("1", "<s>", "eval")  # expect: SX301
breakpoint()  # expect: SX301

# case: references count, not only calls: aliases, walrus, lambdas, defaults, decorators
run = eval  # expect: SX301
(f := exec)  # expect: SX301
g = lambda s: eval(s)  # expect: SX301
def h(code, runner=exec):  # expect: SX301
    return runner(code)
@eval  # expect: SX301
def k():
    pass

# case: builtins module spelled out
import builtins  # expect: SX201, SX202
builtins.eval("1")  # expect: SX301

# case: ordinary calls with similar names are fine
import re  # ok: SX301
pattern = re.compile(r"\d+")  # ok: SX301, SX304
text = "a = 1".format()  # ok: SX301
values = sorted([3, 1, 2], key=lambda v: -v)  # ok: SX301
print(pattern.findall("a1b22"), text, values)  # ok: SX302

# case: namespace dictionaries
g = globals()  # expect: SX302
b = globals()["__builtins__"]  # expect: SX302, SX401
l = locals()  # expect: SX302
v = vars(object)  # ok: SX302
def f():
    return vars()["x"]  # expect: SX311

# case: vars of the code's own object runs; of a module, or with no argument, never
import json
class Point:
    pass
print(vars(Point()))  # ok: SX311
j = vars(json)  # expect: SX311, SX410
k = vars  # expect: SX311

# case: in restricted mode too (the runtime's vars takes only instances of own classes)
# mode: restricted
import json
class Point:
    pass
print(vars(Point()))  # ok: SX311
j = vars(json)  # expect: SX311, SX410

# case: getattr with literal names is checked like attribute access
class Point:
    x = 1
p = Point()
print(getattr(p, "x"))  # ok: SX303, SX401
setattr(p, "y", 2)  # ok: SX303
getattr(p, "__class__")  # expect: SX401
# ok: SX303

# case: getattr with obfuscated but foldable names
getattr((), "__cla" + "ss__")  # expect: SX401
getattr((), "".join(["__", "class", "__"]))  # expect: SX401
getattr((), "__ssalc__"[::-1])  # expect: SX401
getattr((), f"{'__cl'}ass__")  # expect: SX401
getattr((), "%s%s" % ("__cla", "ss__"))  # expect: SX401
getattr((), "{}{}".format("__cla", "ss__"))  # expect: SX401
getattr((), chr(95) * 2 + "class" + chr(95) * 2)  # expect: SX401

# case: getattr with names that cannot be folded
import json  # ok: SX303
data = json.loads('{"a": "__class__"}')
getattr((), data["a"])  # expect: SX303
name = input()
hasattr(object, name)  # expect: SX303
import operator
operator.attrgetter(name)(object)  # expect: SX303
getattr(object, *["__class__"])  # expect: SX303

# case: process and network calls reached through re-exports
import pathlib  # ok: SX201
pathlib.os.system("id")  # expect: SX304
# ok: SX403

# case: in restricted mode a re-exported module is a hazard as well
# mode: restricted
import pathlib  # ok: SX201
pathlib.posix  # expect: SX403

# case: process calls by alias
from os import system as run  # ok: SX201, SX202
run("id")  # expect: SX304
import os as o  # ok: SX201, SX202
o.popen("id")  # expect: SX304
o.execv("/bin/sh", ["sh"])  # expect: SX304

# case: subprocess by string import
__import__("subprocess").run(["id"])  # expect: SX201, SX202, SX301, SX304

# case: files in the working directory are fine
from pathlib import Path
with open("data.txt", "w") as handle:  # ok: SX305
    handle.write("hello")
print(Path("data.txt").read_text())  # ok: SX305
print(open("sub/dir/file.csv").read())  # ok: SX305
Path("out") / "result.json"  # ok: SX305

# case: files outside the working directory
open("/etc/passwd").read()  # expect: SX305
open("../../etc/shadow")  # expect: SX305
open("~/.ssh/id_rsa")  # expect: SX305
from pathlib import Path
Path("/root").iterdir()  # expect: SX305
open("/et" + "c/passwd")  # expect: SX305
open(file="/etc/hosts")  # expect: SX305

# case: string annotations that are types are fine
from typing import Optional, List
def parse_rows(rows: "List[dict]", limit: "Optional[int]" = None) -> "list[str] | None":  # ok: SX308
    return None
count: "int" = 0  # ok: SX308

# case: string annotations that hold code are evaluated by get_type_hints
import functools, typing
@functools.singledispatch
def handle(x):
    return x
@handle.register
def _(x: "__import__('os').system('id')"):  # expect: SX308
    return x
def g() -> "(lambda: 1)()":  # expect: SX308
    pass
alias = typing.List["[c for c in ().__class__.__base__.__subclasses__()]"]  # expect: SX308
ref = typing.ForwardRef("exec('x')")  # expect: SX308
plain = {"key (with) parens": 1}["key (with) parens"]  # ok: SX308

# case: help starts a pager process
help(print)  # expect: SX301

# case: an absolute part replaces a pathlib path
from pathlib import Path
base = Path("data")
(base / "/etc/passwd").read_text()  # expect: SX305
base.joinpath("..", "..", "etc").iterdir()  # expect: SX305
(base / "reports" / "2024.csv").exists()  # ok: SX305
ratio = 10 / 4  # ok: SX305

# case: other openers, spread arguments, later pathlib parts and the home directory
import io, contextlib, pathlib
io.FileIO("/etc/passwd").read()  # expect: SX305
raw_open = io.FileIO
raw_open("/etc/shadow")  # expect: SX305
io.open_code("/etc/passwd")  # expect: SX305
contextlib.chdir("/")  # expect: SX305
pathlib.Path(*["/", "etc", "passwd"]).read_text()  # expect: SX305
pathlib.Path("data", "/etc/passwd").read_text()  # expect: SX305
open(**{"file": "/etc/passwd"})  # expect: SX305
pathlib.Path.home().joinpath(".ssh", "id_rsa").read_text()  # expect: SX305
io.FileIO("out.bin", "w").write(b"x")  # ok: SX305
pathlib.Path("data", "x.csv").exists()  # ok: SX305
pathlib.Path(*["data", "x.csv"]).exists()  # ok: SX305
with contextlib.chdir("sub"):  # ok: SX305
    pass

# case: open under another name, and inherited file descriptors
import io
reader = open
reader("/etc/passwd").read()  # expect: SX305
reader("notes.txt").read()  # ok: SX305
open(3).read()  # expect: SX305
io.FileIO(0).read()  # expect: SX305
io.open(1, "w").write("x")  # expect: SX305
open("3").read()  # ok: SX305

# case: timing a function runs natively
import timeit
def work():
    return sum(range(100))
timeit.timeit(work, number=10)  # ok: SX312
timeit.repeat(lambda: work(), repeat=2, number=5)  # ok: SX312
timeit.Timer(work).timeit(number=3)  # ok: SX312

# case: a timed code string is code the checks never saw
import timeit
timeit.timeit("import ctypes", number=1)  # expect: SX312
timeit.Timer(stmt="x = 1", setup="import os")  # expect: SX312
code = "print(1)"
timeit.repeat(code)  # expect: SX312
args = ["pass"]
timeit.timeit(*args)  # expect: SX312
def shadowed():
    pass
shadowed = "import ctypes"
timeit.timeit(shadowed)  # expect: SX312
timeit.main(["-s", "import os", "pass"])  # expect: SX312
