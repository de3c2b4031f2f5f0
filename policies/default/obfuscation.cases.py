# Obfuscated variants of the classic escapes, and the known misses (todo-expect), written down openly.

# case: getattr passed around instead of called
import functools, operator
g = getattr  # expect: SX303
g((), "__class__")  # expect: SX411
peek = functools.partial(getattr, ())  # expect: SX303
peek("__class__")  # expect: SX411

# case: vars()/globals() lookups of names
vars()["__builtins__"]  # expect: SX311, SX401
globals().get("__builtins__")  # expect: SX302, SX411

# case: the subclass walk spread over helper functions and a walrus
def base(o):
    return o.__class__.__base__  # expect: SX401
def subs(c):
    return c.__subclasses__()  # expect: SX401
if (found := [c for c in subs(base(())) if c.__name__ == "Popen"]):
    found[0](["id"])

# case: attribute names folded through a name bound once
part = "__cl"
name = part + "ass__"
getattr((), name)  # expect: SX401

# case: format fields in a template bound to a name
template = "{0.__class__}"
template.format(1)  # expect: SX401

# case: a format template read from data cannot be folded
import json
template = json.loads('"{0.__class__}"')
template.format(1)  # todo-expect: SX401  # expect: SX407

# case: a tool reached through an alias
shell = run_shell
shell(command="id")  # todo-expect: SX601

# case: climbing out of the workdir through Path methods
from pathlib import Path
Path(".").resolve().parent.parent.joinpath("etc", "passwd").read_text()  # todo-expect: SX305
Path(Path.cwd().anchor, "etc", "passwd").read_text()  # todo-expect: SX305

# case: a file class taken from a file object with type() opens any path
raw_file_class = type(open("data.bin", "rb").raw)
raw_file_class("/etc/passwd").read()  # todo-expect: SX305

# case: open carried in a container, a parameter or an attribute
[open][0]("/etc/passwd")  # todo-expect: SX305
(lambda opener: opener("/etc/passwd"))(open)  # todo-expect: SX305

# case: type() three-argument class creation is ordinary syntax
Klass = type("Klass", (), {"x": 1})  # ok: SX301, SX401
print(Klass.x)

# case: lambdas and nested comprehensions in defaults and decorators
def register(fn=lambda: [[c for c in k.__subclasses__()] for k in [object]]):  # expect: SX401
    return fn
@register
def nothing():
    return None

# case: module aliases through rebinding and attribute hops
# mode: restricted
import json  # ok: SX201
p = json
p = json
shell = p.posix  # expect: SX403
shell.system("id")

# case: re-exports reached by getattr with a literal name
# mode: restricted
import pathlib, json  # ok: SX201
getattr(pathlib, "posix")  # expect: SX403
getattr(json, "ty" + "pes")  # expect: SX403
getattr(json, "dumps")({"a": 1})  # ok: SX403

# case: re-exports reached by operator.attrgetter
# mode: restricted
import operator, pathlib, json  # ok: SX201
operator.attrgetter("posix")(pathlib)  # expect: SX403
operator.attrgetter("po" + "six.system")(pathlib)  # expect: SX403
operator.attrgetter("dumps", "loads")(json)  # ok: SX403
fetch_os = operator.attrgetter("os")
fetch_os(pathlib)  # todo-expect: SX403  # expect: SX410
