"""The environment every session starts with, defined once: the host builds a session's config
from it (with the session's workdir), and a pool member sets it ahead of its claim (with the
workdir as the session will see it), so that the claim only changes what differs."""

from __future__ import annotations

__all__ = ["TMP_DIR", "base_environment"]

TMP_DIR = ".tmp"  # a session's TMPDIR inside its workdir; never reported as artifacts


def base_environment(workdir: str) -> dict[str, str]:
    """The variables every session gets before the caller's own, its home at ``workdir``."""
    tmp = f"{workdir}/{TMP_DIR}"
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": workdir,
        "TMPDIR": tmp,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": f"{tmp}/matplotlib",
    }
