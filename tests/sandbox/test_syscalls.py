"""Syscall numbers: resolved by the host through libseccomp, installed in the template."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import safeexec.sandbox
from safeexec.sandbox import syscalls

_CALL = re.compile(r"\bsyscall\(\s*\"(\w+)\"")


def test_every_syscall_the_sandbox_calls_by_name_is_one_the_host_resolves() -> None:
    # The template gets numbers for CALLED only; any other name would load libseccomp there.
    root = Path(safeexec.sandbox.__file__).parent
    called = {
        name
        for path in root.rglob("*.py")
        if path.name != "probe.py"  # the doctor's probe is a process of its own
        for name in _CALL.findall(path.read_text(encoding="utf-8"))
    }
    assert called
    assert called <= set(syscalls.CALLED), sorted(called - set(syscalls.CALLED))


def test_resolve_gives_libseccomp_numbers_and_skips_names_this_arch_lacks() -> None:
    numbers = syscalls.resolve(("landlock_create_ruleset", "no_such_call_here"))
    assert set(numbers) == {"landlock_create_ruleset"}
    assert numbers["landlock_create_ruleset"] > 0


def test_installed_numbers_are_used_without_loading_libseccomp() -> None:
    numbers = syscalls.resolve(("capset",))
    probe = (
        "import sys\n"
        "from safeexec.sandbox import syscalls\n"
        f"syscalls.install({numbers!r})\n"
        "print(syscalls.syscall_number('capset'), 'pyseccomp' in sys.modules)\n"
        "syscalls.syscall_number('getpid')\n"
        "print('pyseccomp' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", probe], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == [str(numbers["capset"]), "False", "True"]


_COMPILE = (
    "import sys\n"
    "spawned = []\n"
    "sys.addaudithook(lambda event, args: event == 'subprocess.Popen' and spawned.append(args))\n"
    "{load}\n"
    "import ctypes.util\n"
    "from safeexec.sandbox import seccomp, syscalls\n"
    "print(seccomp.compile_filter().hex(), sorted(syscalls.resolve(syscalls.CALLED).items()))\n"
    "print(len(spawned), ctypes.util.find_library.__qualname__)\n"
)


def test_the_host_compiles_the_same_filter_without_running_ldconfig() -> None:
    # pyseccomp imported as is looks its libraries up through ``ldconfig -p``; loaded by
    # load_pyseccomp it must find the same ones, so the filter and the numbers are the same.
    plain, quick = (
        subprocess.run(
            [sys.executable, "-I", "-c", _COMPILE.format(load=load)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        for load in ("import pyseccomp", "pass")
    )
    assert quick[0] == plain[0]
    assert int(plain[1].split()[0]) >= 1  # ldconfig ran (the case this saves)
    assert quick[1] == "0 find_library"  # nothing ran, and the real lookup is back in place


def test_the_sonames_tried_first_are_what_the_real_lookup_finds() -> None:
    import ctypes.util

    for name, soname in syscalls._SONAMES.items():
        assert ctypes.util.find_library(name) == soname
