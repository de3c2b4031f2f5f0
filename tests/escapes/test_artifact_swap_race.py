"""Files in the workdir swapped for symlinks (and grown) while the host collects artifacts.

A process the cell leaves behind flips ``race.txt`` between a regular file and a symlink to the
host's secret file, and ``race-dir`` between a directory and a symlink to the secret's directory,
while another file keeps growing: between the host's scan and its read, every name may change.
The host must open with ``O_NOFOLLOW`` at every step and trust only what ``fstat`` on the open
descriptor says (``Sandbox.run`` checks every artifact for the secret).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_swapping_files_for_links_during_collection_leaks_nothing(sandbox: Sandbox) -> None:
    secret = sandbox.canaries.secret_file
    code = f"""
import os, time
if os.fork() == 0:
    stop = time.monotonic() + 1.5
    grow = open('growing.bin', 'ab')
    while time.monotonic() < stop:
        for name, target in (('race.txt', {str(secret)!r}), ('race-dir', {str(secret.parent)!r})):
            try:
                os.rename(name, name + '.old')
            except OSError:
                pass
            try:
                os.symlink(target, name + '.new')
                os.rename(name + '.new', name)
            except OSError:
                pass
            try:
                os.unlink(name)
            except OSError:
                pass
            if name == 'race.txt':
                with open(name, 'w') as handle:
                    handle.write('harmless')
            else:
                os.makedirs(name, exist_ok=True)
                with open(name + '/secret.txt', 'w') as handle:
                    handle.write('harmless')
        grow.write(b'x' * 4096)
    os._exit(0)
print('racing')
"""
    for _ in range(4):
        ran = sandbox.run(code)
        assert ran.result.status is ExecStatus.OK, ran.text
        for _ in range(3):
            sandbox.run("import time; time.sleep(0.1)")
    sandbox.assert_usable()
