from __future__ import annotations

from typing import TYPE_CHECKING

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox


def test_writing_outside_the_workdir_is_denied(sandbox: Sandbox) -> None:
    target = sandbox.canaries.secret_file
    code = f"""
results = []
for path in [{str(target)!r}, {str(target.parent / "new.txt")!r}, '/tmp/escape.txt',
             '/etc/escape', '/dev/shm/escape', '/var/tmp/escape']:
    try:
        with open(path, 'w') as fh:
            fh.write('pwned')
        results.append((path, 'written'))
    except OSError as exc:
        results.append((path, type(exc).__name__))
print(results)
"""
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK, ran.text
    assert "written" not in ran.stdout, ran.stdout
    assert not (target.parent / "new.txt").exists()
    sandbox.assert_usable()


def test_writing_inside_the_workdir_works_and_is_an_artifact(sandbox: Sandbox) -> None:
    ran = sandbox.run("open('inside.txt', 'w').write('ok')")
    assert ran.result.status is ExecStatus.OK
    assert [a.name for a in ran.result.artifacts] == ["inside.txt"]
