"""Where a result came from: the commit, the package versions, the environment, the seeds, the
budgets and the model, written into ``results.json`` beside the numbers they produced."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

from safeexec._support.environment import fingerprint
from safeexec.model.codec import JSONValue

__all__ = ["provenance"]

_ROOT = Path(__file__).resolve().parents[2]


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(_ROOT), *args], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def provenance(
    *, model: str, seeds: list[int], budgets: dict[str, JSONValue], argv: list[str]
) -> dict[str, JSONValue]:
    """The run's provenance: ``commit`` (``None`` outside a git checkout) and whether the tree had
    uncommitted changes, every installed distribution's version, the environment (interpreter,
    platform, kernel, CPUs, and the SHA-256 of the environment fingerprint the audit log also
    records), the seeds, the budgets, the model id and the command line."""
    document = json.loads(fingerprint())
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "commit": _git("rev-parse", "HEAD"),
        "dirty": None if status is None else bool(status),
        "packages": document["distributions"],
        "environment": {
            "interpreter": document["interpreter"],
            "python": sys.version.split()[0],
            "platform": document["platform"],
            "kernel": platform.release(),
            "cpus": os.cpu_count(),
            "fingerprint_sha256": hashlib.sha256(fingerprint()).hexdigest(),
        },
        "seeds": list(seeds),
        "budgets": budgets,
        "model": model,
        "argv": list(argv),
    }
