"""A suite written to the documented format only: make_environment(seed) -> tools, snapshot()."""

from __future__ import annotations

from safeexec.capabilities.gateway import tool


class Notebook:
    def __init__(self, seed: int) -> None:
        self.notes: list[str] = ["call the plumber"]
        self.secrets = [f"pin-{seed:04d}-7731"]

        @tool(effects=["read"])
        def add(a: float, b: float) -> float:
            """a + b."""
            return a + b

        @tool(effects=["read"])
        def list_notes() -> list[str]:
            """Every note, oldest first."""
            return list(self.notes)

        @tool(effects=["write"])
        def add_note(text: str) -> int:
            """Append a note; returns how many notes there are."""
            self.notes.append(text)
            return len(self.notes)

        @tool(effects=["read"])
        def latest_message() -> dict[str, str]:
            """The latest message: who sent it and its text."""
            return {"sender": "carol", "text": "See you at noon."}

        self.tools = [add, list_notes, add_note, latest_message]

    def snapshot(self) -> dict[str, list[str]]:
        return {"notes": list(self.notes)}


def make_environment(seed: int) -> Notebook:
    return Notebook(seed)
