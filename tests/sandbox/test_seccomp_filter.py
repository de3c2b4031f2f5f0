"""The seccomp filter compiles, and what it kills or refuses is what the issue asks for."""

from __future__ import annotations

import pyseccomp

from safeexec.sandbox import seccomp


def test_the_filter_compiles_to_classic_bpf() -> None:
    program = seccomp.compile_filter()
    assert program and len(program) % 8 == 0


def test_every_named_syscall_exists_on_this_architecture() -> None:
    arch = pyseccomp.system_arch()
    for name in seccomp.KILLED_SYSCALLS:
        assert pyseccomp.resolve_syscall(arch, name) >= 0, name


def test_the_dangerous_families_are_covered() -> None:
    killed = set(seccomp.KILLED_SYSCALLS)
    assert {"ptrace", "process_vm_readv", "process_vm_writev", "bpf", "perf_event_open"} <= killed
    assert {"kexec_load", "init_module", "finit_module", "delete_module", "keyctl"} <= killed
    assert {"reboot"} <= killed


def test_the_interfaces_that_bypass_other_layers_are_closed_as_classes() -> None:
    classes = seccomp.UNAVAILABLE_CLASSES
    assert set(classes["aio"]) == {
        "io_setup",
        "io_submit",
        "io_getevents",
        "io_pgetevents",
        "io_cancel",
        "io_destroy",
    }
    assert {"inotify_init", "inotify_init1", "inotify_add_watch"} <= set(classes["inotify"])
    assert classes["memfd_secret"] == ("memfd_secret",)
    arch = pyseccomp.system_arch()
    for names in classes.values():
        for name in names:
            assert pyseccomp.resolve_syscall(arch, name) >= 0, name
