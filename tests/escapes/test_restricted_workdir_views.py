"""The views restricted mode builds of ``os``, ``os.path``, ``pathlib``, ``glob``, ``shutil``,
``tempfile``, ``sys``, ``platform``, ``locale`` and ``traceback``, under attack.

Every file call resolves beneath the workdir by ``BoundPath`` and never follows a link; the
environment is empty; nothing in them is or holds a real module. Each attack below must fail,
leave the canaries intact and show nothing of them; the host plants the links (the code cannot).
"""

# ruff: noqa: E501 - a table of attack snippets reads best one per line

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from escape_support import Canaries
    from restricted_support import BoxFactory

_SECRET = "{secret}"
_DIR = "{secret_dir}"

ATTACKS = {
    "listdir-root": "import os\nprint(os.listdir('/'))",
    "listdir-up": "import os\nprint(os.listdir('..'))",
    "listdir-secret-dir": f"import os\nprint(os.listdir('{_DIR}'))",
    "walk-root": "import os\nprint(list(os.walk('/'))[:3])",
    "stat-outside": f"import os\nprint(os.stat('{_SECRET}'))",
    "remove-outside": f"import os\nos.remove('{_SECRET}')",
    "rename-out": "import os\nopen('x', 'w').write('x')\nos.rename('x', '../x')",
    "rename-in": f"import os\nos.rename('{_SECRET}', 'stolen')\nprint(open('stolen').read())",
    "makedirs-up": "import os\nos.makedirs('../../escape', exist_ok=True)",
    "copy-in": f"import shutil\nshutil.copy('{_SECRET}', 'x')\nprint(open('x').read())",
    "copy-out": "import shutil\nopen('x', 'w').write('x')\nshutil.copy('x', '/tmp/safeexec-x')",
    "move-out": f"import shutil\nopen('x', 'w').write('x')\nshutil.move('x', '{_DIR}')",
    "rmtree-up": "import shutil\nshutil.rmtree('..')",
    "rmtree-root": "import shutil\nshutil.rmtree('/')",
    "glob-absolute": f"import glob\nprint(glob.glob('{_DIR}/*'))\nprint(open(glob.glob('{_DIR}/*')[0]).read())",
    "glob-up": "import glob\nprint(open(glob.glob('../*/secret.txt')[0]).read())",
    "glob-through-planted-link": "import glob\nprint([open(p).read() for p in glob.glob('planted-dir/*')])",
    "glob-recursive-link": "import glob\nprint([open(p).read() for p in glob.glob('**/secret.txt', recursive=True)])",
    "path-read-outside": f"from pathlib import Path\nprint(Path('{_SECRET}').read_text())",
    "path-read-planted": "from pathlib import Path\nprint(Path('planted').read_text())",
    "path-through-planted-dir": "from pathlib import Path\nprint(Path('planted-dir/secret.txt').read_text())",
    "path-iterdir-up": "from pathlib import Path\nprint(list(Path('..').iterdir()))",
    "path-write-outside": f"from pathlib import Path\nPath('{_DIR}/new.txt').write_text('x')",
    "path-rename-out": "from pathlib import Path\np = Path('a.txt')\np.write_text('x')\np.rename('../a.txt')",
    "path-open-planted-append": "from pathlib import Path\nPath('planted').open('a').write('x')",
    "path-private-ops": "from pathlib import Path\nprint(Path._ops)",
    "path-class-init-foreign": "from pathlib import Path\nclass C:\n    pass\nPath.read_text(C())",
    "tempfile-outside": "import tempfile\nprint(tempfile.TemporaryDirectory(dir='/tmp').name)",
    "tempfile-up": "import tempfile\nprint(tempfile.mkdtemp(dir='..'))",
    "environ-secret": "import os\nprint(dict(os.environ), os.getenv('SAFEEXEC_CANARY_SECRET'))\nassert os.getenv('SAFEEXEC_CANARY_SECRET')",
    "sys-modules": "import sys\nprint(sys.modules['os'])",
    "sys-getframe": "import sys\nprint(sys._getframe())",
    "sys-stdout-buffer": "import sys\nprint(sys.stdout.buffer)",
    "sys-stdout-executor": "import sys\nprint(sys.stdout._executor)",
    "traceback-frames": "import traceback\ntry:\n    1 / 0\nexcept ZeroDivisionError as e:\n    print(e.__traceback__.tb_frame)",
    "traceback-non-exception": "import traceback\nprint(traceback.format_exception(traceback))",
    "platform-node": "import platform\nprint(platform.node())",
    "locale-setlocale": "import locale\nlocale.setlocale(locale.LC_ALL, 'C')",
    "os-system": "import os\nos.system('id')",
    "os-open-fd": "import os\nprint(os.open('/etc/passwd', 0))",
}


@pytest.mark.parametrize("attack", list(ATTACKS), ids=list(ATTACKS))
def test_a_view_attack_fails_and_shows_nothing(
    restricted_box: BoxFactory, canaries: Canaries, tmp_path: Path, attack: str
) -> None:
    box = restricted_box()
    work = tmp_path / "work-0"
    (work / "planted").symlink_to(canaries.secret_file)
    (work / "planted-dir").symlink_to(canaries.secret_file.parent)
    secret = str(canaries.secret_file)
    code = ATTACKS[attack].replace(_SECRET, secret).replace(_DIR, str(canaries.secret_file.parent))
    outcome = box.run(code)
    # Refused, or (walks and globs skip what they may not enter) nothing found.
    assert outcome.status.value == "error" or outcome.stdout == "[]\n", outcome.text
    assert canaries.secret not in outcome.text
    assert "secret.txt" not in outcome.stdout, outcome.text
    assert not (tmp_path / "x").exists() and not (tmp_path / "escape").exists()
    assert not Path("/tmp/safeexec-x").exists()
    assert (canaries.secret_file.parent / "secret.txt").exists()
    box.assert_usable()


def test_ordinary_file_code_runs(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    outcome = box.run(
        "import os, glob, shutil, tempfile, sys, traceback\nfrom pathlib import Path\n"
        "os.makedirs('out/a', exist_ok=True)\nPath('out/a/x.txt').write_text('hi')\n"
        "shutil.copy('out/a/x.txt', 'out/y.txt')\nos.rename('out/y.txt', 'out/z.txt')\n"
        "with tempfile.TemporaryDirectory(dir='.') as tmp:\n"
        "    Path(tmp, 'f').write_bytes(b'12')\n    size = os.path.getsize(os.path.join(tmp, 'f'))\n"
        "walked = sorted(f for _, _, files in os.walk('out') for f in files)\n"
        "print(sorted(glob.glob('out/**/*.txt', recursive=True)), walked, size,"
        " sorted(p.name for p in Path('out').iterdir()), os.path.exists('out/z.txt'))\n"
        "try:\n    1 / 0\nexcept ZeroDivisionError:\n    print(traceback.format_exc().splitlines()[-1])\n"
        "print('x', file=sys.stdout)\n"
    )
    assert outcome.stdout == (
        "['out/a/x.txt', 'out/z.txt'] ['x.txt', 'z.txt'] 2 ['a', 'z.txt'] True\n"
        "ZeroDivisionError: division by zero\nx\n"
    ), outcome.text
