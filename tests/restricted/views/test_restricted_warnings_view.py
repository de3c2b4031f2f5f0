"""The ``warnings`` view: filters and catching per executor, never the process's own."""

from __future__ import annotations

import io
import warnings

import pytest

from safeexec.restricted import RestrictedExecutor
from safeexec.restricted.views import WorkerViews


def _executor(sink: io.StringIO | None = None) -> RestrictedExecutor:
    return RestrictedExecutor(views=WorkerViews, imports=("warnings",), sink=sink or io.StringIO())


def test_catch_warnings_records_what_the_code_warns() -> None:
    code = (
        "import warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    warnings.warn('old', DeprecationWarning)\n"
        "    warnings.warn('again', DeprecationWarning)\n"
        "(len(caught), caught[0].category.__name__, str(caught[1].message))"
    )
    assert _executor().execute(code, filename="<t>") == "(2, 'DeprecationWarning', 'again')"


def test_the_code_s_filters_never_reach_the_process() -> None:
    before = list(warnings.filters)
    executor = _executor()
    executor.execute(
        "import warnings\nwarnings.simplefilter('error')\nwarnings.resetwarnings()\n"
        "warnings.filterwarnings('error', category=UserWarning)",
        filename="<t>",
    )
    assert warnings.filters == before
    with warnings.catch_warnings(record=True) as host:
        warnings.simplefilter("always")
        warnings.warn("the host's own", UserWarning, stacklevel=1)  # not an error
    assert len(host) == 1
    with pytest.raises(UserWarning, match="now an error"):
        executor.execute("warnings.warn('now an error')", filename="<t>")


def test_a_shown_warning_goes_to_the_cell_output_once() -> None:
    sink = io.StringIO()
    executor = _executor(sink)
    executor.execute(
        "import warnings\nfor _ in range(3):\n    warnings.warn('careful')", filename="<t>"
    )
    assert sink.getvalue() == "UserWarning: careful\n"


def test_catch_warnings_restores_the_filters_it_found() -> None:
    code = (
        "import warnings\n"
        "with warnings.catch_warnings():\n    warnings.simplefilter('error')\n"
        "with warnings.catch_warnings(record=True) as caught:\n    warnings.warn('x')\n"
        "len(caught)"
    )
    assert _executor().execute(code, filename="<t>") == "1"


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("import warnings\nwarnings.warn('x', category=int)", TypeError),
        ("import warnings\nwarnings.simplefilter('explode')", ValueError),
        ("import warnings\nwarnings.showwarning", AttributeError),
        ("import warnings\nwarnings.filters", AttributeError),
    ],
)
def test_what_the_view_refuses(code: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        _executor().execute(code, filename="<t>")
