"""The ``logging`` view: a hierarchy of the executor's own, never the process's loggers."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest

from safeexec.restricted import GuardError, RestrictedExecutor
from safeexec.restricted.views import WorkerViews


def _run(code: str, workdir: Path) -> tuple[str | None, str]:
    sink = io.StringIO()
    executor = RestrictedExecutor(
        views=WorkerViews, imports=("logging",), workdir=workdir, sink=sink
    )
    return executor.execute(code, filename="<t>"), sink.getvalue()


def test_basic_config_and_a_named_logger_write_to_the_cell_output(tmp_path: Path) -> None:
    code = (
        "import logging\n"
        "logging.basicConfig(level=logging.INFO, format='%(levelname)s:%(name)s:%(message)s')\n"
        "log = logging.getLogger('agent')\nlog.debug('hidden')\nlog.info('rows=%d', 3)\n"
        "log.propagate = False\nlog.warning('not shown: no handler and no propagation')\n"
        "log.isEnabledFor(logging.INFO)"
    )
    host_handlers = list(logging.getLogger().handlers)
    shown, output = _run(code, tmp_path)
    assert shown == "True"
    assert output.splitlines() == [
        "INFO:agent:rows=3",
        "not shown: no handler and no propagation",
    ]
    assert logging.getLogger().handlers == host_handlers  # the host's root logger is untouched
    assert "agent" not in logging.Logger.manager.loggerDict


def test_a_file_handler_writes_beneath_the_workdir(tmp_path: Path) -> None:
    code = (
        "import logging\nlogging.basicConfig(filename='run.log', format='{levelname} {message}',"
        " style='{')\nlogging.error('disk %s', 'full')\n"
    )
    _run(code, tmp_path)
    assert (tmp_path / "run.log").read_text() == "ERROR disk full\n"
    with pytest.raises(PermissionError):
        _run("import logging\nlogging.FileHandler('/tmp/outside.log')", tmp_path)


def test_exception_logs_text_never_a_traceback_object(tmp_path: Path) -> None:
    code = (
        "import logging\nseen = []\nclass Keep(logging.Handler):\n"
        "    def emit(self, record):\n        seen.append(record)\n"
        "log = logging.getLogger('x')\nlog.addHandler(Keep())\n"
        "try:\n    1 / 0\nexcept ZeroDivisionError:\n    log.exception('failed')\n"
        "(seen[0].message, 'ZeroDivisionError' in seen[0].exc_text, hasattr(seen[0], 'exc_info'))"
    )
    assert _run(code, tmp_path)[0] == "('', True, False)"


@pytest.mark.parametrize(
    "code",
    [
        "import logging\nlogging.basicConfig(format='{name.__class__}', style='{')\n"
        "logging.error('x')",
        "import logging\nlogging.Logger.manager",
        "import logging\nlogging.getLogger().manager",
    ],
    ids=["format-walk", "global-manager", "instance-manager"],
)
def test_the_view_reaches_no_host_logger(tmp_path: Path, code: str) -> None:
    with pytest.raises((GuardError, AttributeError)):
        _run(code, tmp_path)
