# Model-style snippets that inspect the environment they run in.

# %% sys-version
import sys

print("Python", sys.version.split()[0])
assert sys.version_info >= (3, 11)

# %% platform-info
import platform

print(platform.python_version(), platform.system())
assert platform.python_version().startswith("3.")

# %% os-environ-get
import os

home = os.environ.get("MY_APP_HOME", "/nonexistent-default")
debug = os.getenv("DEBUG", "0") == "1"
print(home, debug)
assert debug is False

# %% os-cpu-count
import os

cpus = os.cpu_count() or 1
workers = max(1, cpus - 1)
print("using", workers, "workers")
assert workers >= 1

# %% sys-path-check
import sys

print("path entries:", len(sys.path))
print("max int size:", sys.maxsize > 2**32)
assert isinstance(sys.path, list)

# %% importlib-metadata-version
from importlib.metadata import PackageNotFoundError, version

try:
    v = version("numpy")
except PackageNotFoundError:
    v = "missing"
print("numpy version:", v)
assert v != ""

# %% try-import-fallback
try:
    import numpy as np
    HAVE_NUMPY = True
except ImportError:
    HAVE_NUMPY = False
print("numpy available:", HAVE_NUMPY)
assert HAVE_NUMPY

# %% locale-encoding
import locale
import sys

enc = sys.getdefaultencoding()
pref = locale.getpreferredencoding(False)
print(enc, pref)
assert enc == "utf-8"

# %% sys-getsizeof
import sys

small = sys.getsizeof([])
big = sys.getsizeof(list(range(1000)))
print(small, big)
assert big > small

# %% recursion-limit-read
import sys

limit = sys.getrecursionlimit()
print("recursion limit:", limit)
assert limit >= 100

# %% shutil-disk-usage
import shutil

usage = shutil.disk_usage(".")
print(f"free: {usage.free // (1024 * 1024)} MiB")
assert usage.total >= usage.free >= 0

# %% logging-basic
import logging

logging.basicConfig(level=logging.INFO, format="%(levelname)s:%(message)s")
log = logging.getLogger("agent")
log.info("starting analysis")
log.warning("low disk space is only a test")
assert log.isEnabledFor(logging.INFO)
print("logged")
