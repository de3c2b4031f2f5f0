"""The template process (zygote) when its host goes away."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from safeexec.sandbox import zygote
from safeexec.sandbox.protocol import Prepared, TemplateOptions
from safeexec.sandbox.zygote import _Member, _pick


def test_a_host_gone_before_the_template_writes_ends_it_quietly() -> None:
    # The host's end is closed before the template says it is ready, so its first write fails
    # (a CLI that exits while its warm template boots); that is the host leaving, not a crash.
    host_end, child_end = socket.socketpair()
    host_end.close()
    options = TemplateOptions(preload=(), pool_size=1)
    with child_end:
        done = subprocess.run(
            [
                sys.executable,
                "-I",
                "-m",
                "safeexec.sandbox.zygote",
                str(child_end.fileno()),
                options.to_argument(),
            ],
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            cwd="/",
            stdin=subprocess.DEVNULL,
            capture_output=True,
            pass_fds=[child_end.fileno()],
            start_new_session=True,
            timeout=60,
        )
    assert done.stderr.decode() == ""


def _pooled(pid: int, *, prepared: bool) -> _Member:
    member = _Member(pid=pid, host_pid=pid, pidns=0, pidfd=-1, sock=None, uid=None)  # type: ignore[arg-type]
    member.prepared = Prepared(root="/mnt") if prepared else None
    return member


def test_a_claim_takes_a_member_already_confined_else_the_oldest_else_none() -> None:
    assert _pick([]) is None
    pool = [_pooled(1, prepared=False), _pooled(2, prepared=True), _pooled(3, prepared=False)]
    assert _pick(pool).pid == 2  # type: ignore[union-attr]
    assert _pick(pool).pid == 1  # type: ignore[union-attr]
    assert _pick(pool).pid == 3  # type: ignore[union-attr]
    assert pool == []
    assert _pick(pool) is None


def test_the_template_imports_none_of_the_host_side_layers() -> None:
    # What the template imports before it forks is in every session's memory and on the path of
    # every one-shot run: the worker, confinement and the protocol, not the host's capability
    # layer, value types, parsers or RestrictedPython (loaded only by a restricted cell).
    probe = "import sys, safeexec.sandbox.zygote, safeexec.restricted\nprint(' '.join(sys.modules))"
    done = subprocess.run(
        [sys.executable, "-I", "-c", probe], capture_output=True, text=True, check=True
    )
    loaded = set(done.stdout.split())
    assert {"safeexec.sandbox.worker", "safeexec.sandbox.confine"} <= loaded
    host_side = (
        "safeexec.capabilities.gateway",
        "safeexec.capabilities.specs",
        "safeexec.capabilities.targets",
        "safeexec.model.values",
        "safeexec.policy",
        "safeexec.backends",
        "safeexec.sandbox.egress_client",  # network sessions load it for themselves
        "libcst",
        "RestrictedPython",
        # The host compiles the seccomp filter and resolves syscall numbers: loading libseccomp
        # here ran ldconfig twice at every template start.
        "pyseccomp",
        "ctypes.util",
    )
    assert not {m for m in loaded if m.startswith(host_side)}


def test_the_private_root_holds_the_files_a_linked_package_points_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A strict editable install: the package imports from a tree of links to the checkout.
    checkout = tmp_path / "checkout" / "safeexec"
    checkout.mkdir(parents=True)
    (checkout / "__init__.py").write_text("")
    tree = tmp_path / "tree" / "safeexec"
    tree.mkdir(parents=True)
    (tree / "__init__.py").symlink_to(checkout / "__init__.py")
    monkeypatch.setattr(zygote.safeexec, "__file__", str(tree / "__init__.py"))
    paths = zygote.runtime_read_only_paths()
    assert any(str(checkout) == p or str(checkout).startswith(p + os.sep) for p in paths)
