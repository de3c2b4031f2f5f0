"""What a user installs: the first day from the wheel, types that reach their type checker, and
the wheel's metadata.

The getting-started page runs from the wheel in a fresh virtual environment. A user's ``mypy``
sees ``Session.run(...)`` as an ``Outcome`` through the editable install the Makefile makes (strict
mode: a tree of links, no import hook) and through the wheel; the wheel's METADATA carries the
SPDX license, the classifiers and the keywords, and LICENSE ships inside it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from email.parser import Parser
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
USER_FILE = """\
from safeexec import Session

with Session(policy="default") as session:
    reveal_type(session.run("```python\\nprint(1)\\n```"))
"""
OUTCOME = 'Revealed type is "safeexec.model.values.Outcome"'


def _mypy(python: Path, workdir: Path) -> subprocess.CompletedProcess[str]:
    """Run mypy as a user would: their file, their interpreter, none of this checkout's config."""
    (workdir / "user.py").write_text(USER_FILE, encoding="utf-8")
    (workdir / "mypy.ini").write_text("[mypy]\n", encoding="utf-8")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-incremental",
            "--config-file",
            "mypy.ini",
            "--python-executable",
            str(python),
            "user.py",
        ],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return next(out.glob("safeexec-*.whl"))


def test_an_editable_install_types_session_run(tmp_path: Path) -> None:
    # The installed record (a checkout's own safeexec.egg-info has no direct_url.json).
    records = [d.read_text("direct_url.json") for d in metadata.distributions(name="safeexec")]
    direct = json.loads(next((r for r in records if r), "{}"))
    if not direct.get("dir_info", {}).get("editable"):
        pytest.skip("safeexec is not installed editable here")
    done = _mypy(Path(sys.executable), tmp_path)
    assert OUTCOME in done.stdout, done.stdout + done.stderr
    assert done.returncode == 0, done.stdout


def test_a_wheel_install_types_session_run(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    done = _mypy(python, tmp_path)
    assert OUTCOME in done.stdout, done.stdout + done.stderr


def test_the_wheel_carries_the_license_and_the_classifiers(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (meta_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = Parser().parsestr(archive.read(meta_name).decode())
        (license_name,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        license_text = archive.read(license_name).decode()
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta.get_all("License-File") == ["LICENSE"]
    classifiers = meta.get_all("Classifier") or []
    assert {"Typing :: Typed", "Operating System :: POSIX :: Linux"} <= set(classifiers)
    assert "sandbox" in (meta["Keywords"] or "")
    assert "Apache License" in license_text and "Version 2.0" in license_text
    assert (ROOT / "LICENSE").read_text(encoding="utf-8") == license_text
    assert "safeexec/py.typed" in names


def test_the_getting_started_page_runs_from_the_wheel_in_a_fresh_environment(
    wheel: Path, tmp_path: Path
) -> None:
    # A newcomer's first day: the wheel and its dependencies in a new virtual environment, then
    # every block of the getting-started page, outside any checkout.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run(
        # The walkthrough reads a CSV with pandas and plots with matplotlib: the `data` extra.
        [str(python), "-m", "pip", "install", "--quiet", f"{wheel}[data]"],
        check=True,
        capture_output=True,
        timeout=900,
    )
    page = (ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```$", page, re.S | re.M)
    assert len(blocks) >= 2
    work = tmp_path / "work"
    work.mkdir()
    outputs = []
    for number, block in enumerate(blocks):
        state = tmp_path / f"state-{number}"  # each block reads back its own log
        env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "XDG_STATE_HOME": str(state)}
        done = subprocess.run(
            [str(python), "-c", block],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        outputs.append(done.stdout.splitlines())
    assert outputs[0][0] == "allow ok"
    assert outputs[1][-1].endswith("chain verified (7 events)")
