"""A pytest plugin for the escape suite's runs on each rung (``make test-rungs``): every
``tmp_path`` and its ancestors up to the temporary directory become traversable (never
listable) by other uids, as a deployment's workdirs are. A root host without a mount namespace
(a container's root) then gives its sessions a uid of their own there, as it would for any
such workdir, instead of keeping them on the host's uid (pytest makes its directories 0700).

Loaded with ``-p traversable_tmp`` and ``tests/rungs`` on ``PYTHONPATH``, beside a
``--basetemp`` of the run's own: every pytest that starts as root makes the shared
``/tmp/pytest-of-root`` 0700 again, which cut sessions of another run off their workdirs.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _traversable_tmp_path(tmp_path: Path) -> None:
    top = Path(tempfile.gettempdir()).resolve()
    path = tmp_path.resolve()
    while path not in (top, path.parent):
        info = path.stat()
        if info.st_uid == os.getuid():
            path.chmod(stat.S_IMODE(info.st_mode) | stat.S_IXGRP | stat.S_IXOTH)
        path = path.parent
