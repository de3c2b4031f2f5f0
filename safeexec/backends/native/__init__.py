"""The ``native`` mode: real CPython in a confined subprocess that keeps state between calls.

Sessions are forked from a template process (``safeexec.sandbox.zygote``) that the host starts
with ``execve`` and a minimal environment, so no host memory reaches a sandbox. Each session is
confined in the child (namespaces, rlimits, privilege drop, no_new_privs, Landlock, seccomp; see
``safeexec.sandbox.confine``) and serves requests over a private socketpair. The host trusts
nothing it gets back: frames are bounded JSON, output is capped while it is read, artifacts are
read as regular files beneath the workdir without following links, and every limit is enforced
from outside by SIGKILL of the whole process tree.

One module per job: ``backend`` (the factory, layer probing), ``supply`` (what the backend's
sessions share, handed to each: the template, workers and workdirs made ahead, warm cgroups, the
idle watchdog), ``template`` (the zygote's host-side client), ``native_session`` (a session's
lifecycle), ``handle`` (the host's handle on one worker, and its kill), ``call`` (one call),
``meters`` (the CPU and disk a session is charged), ``procfs`` (what the host reads about a
session's processes) and ``self_test`` (the layer self-test behind ``safeexec doctor``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from safeexec.backends.native.backend import NativeBackend, NativeStatistics, supported_layers
    from safeexec.backends.native.native_session import NativeSession
    from safeexec.backends.native.self_test import DoctorReport, LayerCheck, diagnose
    from safeexec.backends.workdir import ArtifactLimits

__all__ = [
    "ArtifactLimits",
    "DoctorReport",
    "LayerCheck",
    "NativeBackend",
    "NativeSession",
    "NativeStatistics",
    "diagnose",
    "supported_layers",
]

# Every name loads on first use: a one-shot run starts its template from ``template`` before
# it imports the backend, and the session's modules load while the template boots.
_LAZY = {
    "ArtifactLimits": "safeexec.backends.workdir",
    "DoctorReport": f"{__name__}.self_test",
    "LayerCheck": f"{__name__}.self_test",
    "NativeBackend": f"{__name__}.backend",
    "NativeSession": f"{__name__}.native_session",
    "NativeStatistics": f"{__name__}.backend",
    "diagnose": f"{__name__}.self_test",
    "supported_layers": f"{__name__}.backend",
}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)
