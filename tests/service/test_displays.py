"""Rich results over HTTP: a cell's MIME bundles, inline text and blob urls its owner can fetch."""

from __future__ import annotations

from pathlib import Path

from service_support import ALICE, serve

from safeexec.model.values import DisplayKind
from safeexec.service.client import Client

CARD = (
    "class Card:\n"
    "    def _repr_html_(self):\n"
    "        return '<b>card</b>'\n"
    "    def __repr__(self):\n"
    "        return 'Card()'\n"
    "Card()\n"
)


def test_a_cells_mime_bundle_comes_back_with_urls_only_its_session_can_fetch(
    tmp_path: Path,
) -> None:
    with serve(tmp_path / "state", modes=("native",)) as server, server.client() as alice:
        session_id = alice.post("/v1/sessions").json()["session_id"]
        other = alice.post("/v1/sessions").json()["session_id"]
        ran = alice.post(f"/v1/sessions/{session_id}/run", json={"code": CARD}).json()
        (display,) = ran["displays"]
        assert display["kind"] == "result" and display["truncated"] is False
        items = {item["media_type"]: item for item in display["items"]}
        assert set(items) == {"text/plain", "text/html"}
        assert items["text/html"]["text"] == "<b>card</b>"
        html = alice.get(items["text/html"]["url"])
        assert html.status_code == 200 and html.content == b"<b>card</b>"
        assert items["text/html"]["url"].startswith(f"/v1/sessions/{session_id}/blobs/")
        stray = items["text/html"]["url"].replace(session_id, other)
        assert alice.get(stray).status_code == 404


def test_the_client_gets_the_same_display_values_as_a_session(tmp_path: Path) -> None:
    with (
        serve(tmp_path / "state", modes=("native",)) as server,
        Client(server.base_url, token=ALICE) as client,
    ):
        outcome = client.run_code(CARD)
        assert outcome.result is not None
        (display,) = outcome.result.displays
        assert display.kind is DisplayKind.RESULT
        html = display.get("text/html")
        assert html is not None and client.blob(html.blob) == b"<b>card</b>"
