"""Rich results: the last expression and ``display(obj)`` come back as MIME bundles in blobs."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest

from safeexec.audit.blobs import BlobStore
from safeexec.backends.displays import MAX_DISPLAYS, DisplayCollector
from safeexec.model.values import DisplayData, DisplayKind, ExecStatus, Outcome
from safeexec.sandbox.protocol import Display
from safeexec.session.session import Session

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def fenced(code: str) -> str:
    return f"```python\n{code}```\n"


@pytest.fixture(scope="module")
def native(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    state = tmp_path_factory.mktemp("rich") / "state"
    with Session(policy="default", mode="native", state_dir=state) as session:
        yield session


def _ran(outcome: Outcome) -> tuple[DisplayData, ...]:
    assert outcome.result is not None, outcome.observation.text
    assert outcome.result.status is ExecStatus.OK, outcome.observation.text
    return outcome.result.displays


def test_a_dataframe_as_the_last_expression_is_a_result_with_html(native: Session) -> None:
    outcome = native.run(fenced("import pandas as pd\npd.DataFrame({'a': [1, 2]})\n"))
    (result,) = _ran(outcome)
    assert result.kind is DisplayKind.RESULT
    html = result.get("text/html")
    assert html is not None and "<table" in html.text
    assert native.blobs.get(html.blob).decode() == html.text
    plain = result.get("text/plain")
    assert plain is not None and plain.text.split() == ["a", "0", "1", "1", "2"]
    assert "text/html" in outcome.observation.text  # listed for the model, as text


def test_display_sends_every_representation_an_object_offers(native: Session) -> None:
    code = (
        "class Rich:\n"
        "    def __repr__(self): return 'Rich()'\n"
        "    def _repr_markdown_(self): return '**bold**'\n"
        "    def _repr_json_(self): return {'x': [1, 2]}\n"
        "    def _repr_png_(self): return b'\\x89PNG\\r\\n\\x1a\\nfake'\n"
        "display(Rich())\n"
        "print('after')\n"
    )
    (shown,) = _ran(native.run(fenced(code)))
    assert shown.kind is DisplayKind.DISPLAY
    assert [item.media_type for item in shown.items] == [
        "text/plain",
        "text/markdown",
        "image/png",
        "application/json",
    ]
    png = shown.get("image/png")
    assert png is not None and png.text == ""  # binary: in the blob only
    assert native.blobs.get(png.blob) == PNG_SIGNATURE + b"fake"
    json_item = shown.get("application/json")
    assert json_item is not None and json_item.text == '{"x": [1, 2]}'


def test_a_mimebundle_method_gives_its_own_types(native: Session) -> None:
    code = (
        "class B:\n"
        "    def _repr_mimebundle_(self, include=None, exclude=None):\n"
        "        return {'text/html': '<b>b</b>', 'application/vnd.custom+json': {'k': 1}}, {}\n"
        "display(B())\n"
    )
    (shown,) = _ran(native.run(fenced(code)))
    html, custom = shown.get("text/html"), shown.get("application/vnd.custom+json")
    assert html is not None and html.text == "<b>b</b>"
    assert custom is not None and custom.text == '{"k": 1}'


def test_a_matplotlib_figure_displays_as_png(native: Session) -> None:
    code = (
        "import matplotlib.pyplot as plt\n"
        "fig, ax = plt.subplots()\nax.plot([1, 2, 3])\ndisplay(fig)\nplt.close(fig)\n"
    )
    (shown,) = _ran(native.run(fenced(code)))
    png = shown.get("image/png")
    assert png is not None and native.blobs.get(png.blob).startswith(PNG_SIGNATURE)


def test_a_representation_that_raises_is_left_out(native: Session) -> None:
    code = (
        "class Bad:\n"
        "    def __repr__(self): return 'Bad()'\n"
        "    def _repr_html_(self): raise RuntimeError('no')\n"
        "Bad()\n"
    )
    (result,) = _ran(native.run(fenced(code)))
    assert [item.media_type for item in result.items] == ["text/plain"]
    assert result.get("text/plain") is not None


def test_an_object_answering_every_attribute_gets_only_its_repr(native: Session) -> None:
    code = (
        "class Anything:\n"
        "    def __getattr__(self, name): return lambda *a, **k: '<i>made up</i>'\n"
        "    def __repr__(self): return 'Anything()'\n"
        "display(Anything())\n"
    )
    (shown,) = _ran(native.run(fenced(code)))
    assert [item.media_type for item in shown.items] == ["text/plain"]


def test_an_oversized_representation_is_left_out_and_the_session_stays_in_step(
    native: Session,
) -> None:
    code = (
        "class Huge:\n"
        "    def __repr__(self): return 'Huge()'\n"
        "    def _repr_html_(self): return '\"' * (5 * 1024 * 1024)\n"
        "kept = 1\ndisplay(Huge())\n"
    )
    outcome = native.run(fenced(code))
    (shown,) = _ran(outcome)
    assert shown.truncated and shown.get("text/html") is None
    assert "too big" in outcome.observation.text and outcome.observation.truncated
    after = native.run(fenced("print(kept)\n"))
    assert after.result is not None and after.result.status is ExecStatus.OK


def test_displays_past_the_per_call_limit_are_counted_not_kept(native: Session) -> None:
    outcome = native.run(fenced(f"for i in range({MAX_DISPLAYS + 5}):\n    display(i)\n"))
    displays = _ran(outcome)
    assert len(displays) == MAX_DISPLAYS
    assert outcome.result is not None and outcome.result.displays_dropped == 5
    assert "5 displays past the per-call limit were dropped" in outcome.observation.text


def test_a_result_that_is_only_text_is_not_listed_twice(native: Session) -> None:
    outcome = native.run(fenced("1 + 1\n"))
    (result,) = _ran(outcome)
    assert result.get("text/plain") is not None
    assert "--- displays ---" not in outcome.observation.text
    assert "--- stdout ---\n2" in outcome.observation.text


def test_restricted_mode_gives_only_the_text_of_a_result(tmp_path: Path) -> None:
    with Session(policy="default", mode="restricted", state_dir=tmp_path / "state") as session:
        (result,) = _ran(session.run(fenced("[1, 2]\n")))
        refused = session.run(fenced("display(1)\n"))
    assert [item.media_type for item in result.items] == ["text/plain"]
    assert result.get("text/plain") is not None
    assert refused.result is None or refused.result.status is not ExecStatus.OK


def test_the_host_leaves_out_a_binary_payload_that_is_not_base64(tmp_path: Path) -> None:
    collector = DisplayCollector(BlobStore(tmp_path / "blobs"))
    good = base64.b64encode(PNG_SIGNATURE).decode()
    collector.take(
        Display(
            kind="display", data={"text/plain": "x", "image/png": "not base64!", "image/gif": good}
        )
    )
    (shown,) = collector.displays
    assert [item.media_type for item in shown.items] == ["text/plain", "image/gif"]
    assert shown.truncated


def test_the_same_figure_shown_twice_is_stored_once(tmp_path: Path) -> None:
    blobs = BlobStore(tmp_path / "blobs")
    collector = DisplayCollector(blobs)
    frame = Display(kind="display", data={"image/png": base64.b64encode(PNG_SIGNATURE).decode()})
    collector.take(frame)
    collector.take(frame)
    first, second = (display.items[0].blob for display in collector.displays)
    assert first == second
