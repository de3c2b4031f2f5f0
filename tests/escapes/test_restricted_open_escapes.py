"""Files outside the workdir through the confined ``open``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from escape_support import Canaries
    from restricted_support import BoxFactory


def test_paths_outside_the_workdir_are_refused(
    restricted_box: BoxFactory, canaries: Canaries
) -> None:
    box = restricted_box()
    secret = str(canaries.secret_file)
    for path in (secret, "../" * 12 + secret.lstrip("/"), "/etc/passwd", "/proc/self/environ"):
        outcome = box.run(f"open({path!r}).read()")
        assert outcome.status.value == "error", outcome.text
        outcome = box.run(f"open({path!r}, 'w').write('x')")
        assert outcome.status.value == "error", outcome.text
    box.assert_usable()


def test_files_inside_the_workdir_work(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    outcome = box.run("with open('a/../b.txt', 'w') as f:\n    f.write('hi')\nopen('b.txt').read()")
    assert outcome.stdout == "'hi'\n", outcome.text
    assert any(a.name == "b.txt" for a in outcome.result.artifacts)
