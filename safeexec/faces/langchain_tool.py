"""A LangChain tool (``langchain_core.tools.BaseTool``) that runs code in a persistent Session.

``SafeexecTool(session=session)`` is ``run_code``: its arguments are ``code`` and ``timeout``,
its content is the observation text plus the figures as LangChain image blocks, and its
artifact (``response_format="content_and_artifact"``, so ``ToolMessage.artifact``) holds the
step's :class:`~safeexec.model.values.Outcome` and the artifact files. Refused or failing code is a
``ToolMessage`` with ``status="error"`` whose content says why (the rule, or the traceback).

LangChain tools return one result (``BaseTool.astream`` yields it once), so the cell's output
streams the way langchain-core lets a tool report progress: each chunk is a custom callback
event ``safeexec_output`` (``{"stream": "stdout" | "stderr", "text": ...}``), seen by callback
handlers and by ``astream_events(version="v2")`` as ``on_custom_event``, before the result.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.messages.content import create_image_block, create_text_block
from langchain_core.tools import BaseTool, ToolException
from pydantic import BaseModel, ConfigDict, Field

from safeexec.faces.results import File, render
from safeexec.faces.tooldefs import (
    RUN_CODE,
    RUN_CODE_DESCRIPTION,
    code_reply,
    refuse_in_process_session,
)
from safeexec.model.values import Outcome, OutputChunk
from safeexec.session.session import Session

__all__ = ["OUTPUT_EVENT", "RunCodeArguments", "SafeexecTool"]

OUTPUT_EVENT = "safeexec_output"
"""The custom callback event each chunk of a running cell's output is sent as."""


class RunCodeArguments(BaseModel):
    """``run_code``'s arguments (the same as the other faces' schema)."""

    model_config = ConfigDict(extra="forbid")

    code: str = Field(description="Python code, or a reply with a code fence.")
    timeout: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description="Seconds for this call; narrows the policy's wall-clock limit.",
    )


class SafeexecTool(BaseTool):
    """``run_code`` in ``session``, a notebook-like sandbox the caller opens and closes.

    A session whose mode runs code in the host process (``restricted-inprocess``: not a
    security boundary) raises ``InProcessRefused``, when the tool is made and on every run,
    unless ``allow_in_process=True``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = RUN_CODE
    description: str = RUN_CODE_DESCRIPTION
    args_schema: type[BaseModel] = RunCodeArguments
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    handle_tool_error: bool = True
    handle_validation_error: bool = True  # bad arguments go back to the model, not up
    session: Session
    allow_in_process: bool = False

    def model_post_init(self, context: Any, /) -> None:
        self._refuse_in_process()

    def _refuse_in_process(self) -> None:
        refuse_in_process_session(self.session, allowed=self.allow_in_process, face="SafeexecTool")

    def _run(
        self,
        code: str,
        timeout: float | None = None,
        run_manager: CallbackManagerForToolRun | None = None,
        **_: Any,
    ) -> tuple[Any, Any]:
        self._refuse_in_process()
        # Dispatched as dispatch_custom_event does: to the tool run's child manager, as events
        # of the tool's run (so astream_events and handlers attribute them to it).
        events = None if run_manager is None else run_manager.get_child()

        def relay(chunk: OutputChunk) -> None:
            if events is not None and run_manager is not None:
                events.on_custom_event(OUTPUT_EVENT, _chunk(chunk), run_id=run_manager.run_id)

        return self._answer(self.session.run(code_reply(code), timeout=timeout, on_output=relay))

    async def _arun(
        self,
        code: str,
        timeout: float | None = None,
        run_manager: AsyncCallbackManagerForToolRun | None = None,
        **_: Any,
    ) -> tuple[Any, Any]:
        # Cancelling the calling task interrupts the cell (Session.stream), recorded either way.
        self._refuse_in_process()
        events = None if run_manager is None else run_manager.get_child()
        outcome: Outcome | None = None
        async for item in self.session.stream(code_reply(code), timeout=timeout):
            if isinstance(item, OutputChunk):
                if events is not None and run_manager is not None:
                    await events.on_custom_event(
                        OUTPUT_EVENT, _chunk(item), run_id=run_manager.run_id
                    )
            else:
                outcome = item
        if outcome is None:
            raise RuntimeError("Session.stream ended without the step's outcome")
        return self._answer(outcome)

    def _answer(self, outcome: Outcome) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        rendered = render(outcome, self.session.blobs)
        if rendered.is_error:
            raise ToolException(rendered.text)
        content: list[dict[str, Any]] = [dict(create_text_block(rendered.text))]
        content += [_image(f) for f in rendered.images]
        return content, {"outcome": outcome, "files": rendered.files}


def _chunk(chunk: OutputChunk) -> dict[str, str]:
    return {"stream": chunk.stream.value, "text": chunk.text}


def _image(file: File) -> dict[str, Any]:
    return dict(create_image_block(base64=file.base64, mime_type=file.media_type))
