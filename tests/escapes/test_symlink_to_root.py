from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from safeexec.errors import ConfigurationError
from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_a_symlink_to_root_opens_nothing_outside(sandbox: Sandbox) -> None:
    secret = sandbox.canaries.secret_file
    code = f"""
import os

out = []
for target, name in [('/', 'root'), ({str(secret)!r}, 'secret-link')]:
    try:
        os.symlink(target, name)
    except OSError as exc:  # Landlock withholds making links in the workdir
        out.append(('symlink', type(exc).__name__))
for path in ['root/etc/shadow', 'root/etc/passwd', 'secret-link', 'root' + {str(secret)!r}]:
    try:
        out.append((path, open(path).read()[:50]))
    except OSError as exc:
        out.append((path, type(exc).__name__))
print(out)
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK, ran.text
    assert "root:" not in ran.stdout
    if not sandbox.restricted:  # native: Landlock refuses the links
        assert "('symlink', 'PermissionError')" in ran.stdout, ran.stdout
    assert ran.result.artifacts == ()  # links are never collected
    sandbox.assert_usable()


def test_the_host_does_not_follow_links_planted_in_the_workdir(sandbox: Sandbox) -> None:
    secret = sandbox.canaries.secret_file
    # Planted by the host: the code itself may no longer make links where Landlock applies.
    workdir = Path(sandbox.session.workdir)
    (workdir / "planted").symlink_to(secret)
    (workdir / "etc").symlink_to("/etc")
    with pytest.raises(ConfigurationError):
        sandbox.session.download("planted")
    with pytest.raises(ConfigurationError):
        sandbox.session.download("etc/passwd")
    with pytest.raises(OSError):
        sandbox.session.upload("planted", b"overwrite through the link")
    with pytest.raises(OSError):
        sandbox.session.upload("etc/evil", b"write through a linked dir")
    assert secret.read_text() == sandbox.canaries.secret


def test_a_hard_link_is_not_collected(sandbox: Sandbox) -> None:
    ran = sandbox.run("import os; open('a','w').write('x'); os.link('a', 'b')")
    assert ran.result.status is ExecStatus.OK, ran.text
    assert ran.result.artifacts == ()
