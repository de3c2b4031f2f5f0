"""A smolagents ``PythonExecutor`` that runs a ``CodeAgent``'s code in a safeexec Session.

``CodeAgent(tools=..., model=..., executor=SafeexecExecutor(session))`` (smolagents' documented
``executor=`` hook): each code action is one :meth:`Session.run` step under the session's
policy, budget and audit log, instead of smolagents' local executor, which its own docstring
calls "not a security sandbox". The agent's tools become capabilities: they run in the host,
behind the policy's ``[capabilities.<tool>]`` entries (a tool the policy does not list cannot be
granted), checked, counted and audited per call. ``final_answer`` is an
:class:`~safeexec.capabilities.specs.AnswerSink` (it only hands the answer back), so it needs no
entry.

What crosses is JSON: tool arguments and results, the variables the agent sends, the final
answer; the "last output" smolagents shows the model is the ``text/plain`` repr of the cell's
last expression. ``final_answer(x)`` ends the code action at once, as smolagents' own executors
do: one setup step (run, checked and audited like any, before the first action) wraps the
capability in the sandbox so that it records ``x`` in the host and then raises
``FinalAnswerException``, a ``BaseException`` that ``except Exception`` does not catch; the
executor maps it to ``is_final_answer``. A refused or failing action raises, which smolagents
shows the model as the step's error (with safeexec's observation: the rule and how to fix it,
or the traceback).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterable, Mapping
from typing import Any

from smolagents.local_python_executor import CodeOutput, PythonExecutor
from smolagents.tools import Tool

from safeexec.capabilities.specs import AnswerSink, AnyJSON, Effect, ToolSpec, to_plain, tool
from safeexec.errors import CapabilityError
from safeexec.faces.results import render
from safeexec.faces.tooldefs import code_reply, refuse_in_process_session
from safeexec.model.values import ExecStatus, Verdict
from safeexec.session.session import Session

__all__ = ["SafeexecExecutionError", "SafeexecExecutor", "tool_spec"]

FINAL_ANSWER = "final_answer"

# Sandbox code, checked by the policy like an action: ``final_answer`` becomes a function that
# sends the answer to the host capability, then ends the cell. The capability is bound again
# after a reset, so the wrapper is redefined whenever the sandbox's state was lost.
_STOP_ON_FINAL_ANSWER = f"""\
class FinalAnswerException(BaseException):
    \"\"\"Raised by {FINAL_ANSWER}(): the answer is given and the code action ends here.\"\"\"


def _answer_and_stop(answer, _send={FINAL_ANSWER}):
    _send(answer)
    raise FinalAnswerException(answer)


{FINAL_ANSWER} = _answer_and_stop
"""

# smolagents' input types and the annotations the @tool builder turns into JSON Schema.
_HINTS: dict[str, object] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "any": AnyJSON,
    "array": list[AnyJSON],
    "object": dict[str, AnyJSON],
}


class SafeexecExecutionError(Exception):
    """A code action that safeexec refused or that failed; the message is the observation."""


def tool_spec(smol_tool: Tool, *, effects: Iterable[Effect | str] = ()) -> ToolSpec:
    """A :class:`ToolSpec` that calls ``smol_tool`` in the host, its schema from ``inputs``."""
    parameters: list[inspect.Parameter] = []
    annotations: dict[str, object] = {}
    for name, info in smol_tool.inputs.items():
        kind = info.get("type")
        hint = _HINTS.get(kind) if isinstance(kind, str) else None
        if hint is None:
            raise CapabilityError(
                f"tool {smol_tool.name!r} input {name!r} has type {kind!r}, which cannot cross "
                f"the sandbox boundary as JSON; use one of {sorted(_HINTS)}"
            )
        default: object = inspect.Parameter.empty
        if info.get("nullable"):
            hint, default = typing.Optional[hint], None  # noqa: UP045 (a runtime object)
        annotations[name] = hint
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default))

    def call(**kwargs: object) -> object:
        return smol_tool(**kwargs)

    call.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    call.__annotations__ = {**annotations, "return": object}
    spec: ToolSpec = tool(
        call, name=smol_tool.name, description=smol_tool.description, effects=effects
    )
    return spec


class SafeexecExecutor(PythonExecutor):
    """Runs each code action as one step of ``session`` (which the caller opens and closes).

    ``effects`` names what each tool may do (``{"web_search": ["network"]}``), recorded on every
    call; the policy's capability entries decide which tools may be granted and how often.
    A session whose mode runs code in the host process (``restricted-inprocess``: not a
    security boundary) raises ``InProcessRefused``, here and on every action, unless
    ``allow_in_process=True``.
    """

    def __init__(
        self,
        session: Session,
        *,
        effects: Mapping[str, Iterable[Effect | str]] | None = None,
        allow_in_process: bool = False,
    ) -> None:
        refuse_in_process_session(session, allowed=allow_in_process, face="SafeexecExecutor")
        self.session = session
        self._allow_in_process = allow_in_process
        self._effects = dict(effects or {})
        self._granted: dict[str, object] = {}
        self._answer: AnswerSink | None = None  # the final_answer tool, once granted
        self._pending = ""  # variables to define before the next action
        self._wrap_final_answer = False  # the final_answer wrapper is due before the next action

    def send_tools(self, tools: dict[str, Tool]) -> None:
        """Grant the agent's tools (again on every ``agent.run``: already granted ones stay)."""
        for name, smol_tool in tools.items():
            if name in self._granted:
                if self._granted[name] is not smol_tool:
                    raise CapabilityError(
                        f"tool {name!r} is already granted as another object; one session "
                        "holds one tool per name (open a new session for new tools)"
                    )
                continue
            if name == FINAL_ANSWER:
                self._answer = AnswerSink(FINAL_ANSWER, smol_tool.description)
                spec = self._answer.spec
                self._wrap_final_answer = True
            else:
                spec = tool_spec(smol_tool, effects=self._effects.get(name, ()))
            self.session.grant(spec)
            self._granted[name] = smol_tool

    def send_variables(self, variables: dict[str, Any]) -> None:
        """Define ``variables`` in the sandbox (JSON values under identifier names), as one step
        before the next action (smolagents sends them before the tools, which must come first)."""
        lines = []
        for name, value in variables.items():
            if not name.isidentifier() or name.startswith("_"):
                raise ValueError(f"variable name {name!r} is not a public identifier")
            # A JSON-plain copy's repr is a Python literal: the sandbox gets data, never code.
            lines.append(f"{name} = {to_plain(value, where=f'variable {name!r}')!r}")
        self._pending = "\n".join(lines)

    def __call__(self, code_action: str) -> CodeOutput:
        """Run one code action; raise :class:`SafeexecExecutionError` when refused or failing."""
        refuse_in_process_session(
            self.session, allowed=self._allow_in_process, face="SafeexecExecutor"
        )
        if self._wrap_final_answer:
            self._wrap_final_answer = False
            self(_STOP_ON_FINAL_ANSWER)
        if self._pending:
            pending, self._pending = self._pending, ""
            self(pending)
        if self._answer is not None:
            self._answer.take()  # an answer left from a refused step is not this step's
        outcome = self.session.run(code_reply(code_action))
        answer = [] if self._answer is None else self._answer.take()
        result = outcome.result
        if result is not None and result.state_lost and FINAL_ANSWER in self._granted:
            self._wrap_final_answer = True  # a fresh interpreter has the bare capability
        ran = (
            outcome.decision.verdict is not Verdict.DENY
            and result is not None
            and result.status is ExecStatus.OK
        )
        if answer:
            # The cell ended by FinalAnswerException: its logs are what it printed before.
            logs = (
                ""
                if result is None
                else self.session.blobs.get(result.stdout).decode("utf-8", "replace")
            )
            return CodeOutput(output=answer[0], logs=logs, is_final_answer=True)
        if not ran:
            raise SafeexecExecutionError(outcome.observation.text)
        # The last expression's value, as its text/plain repr (a value never crosses as such).
        value = render(outcome, self.session.blobs).value
        return CodeOutput(output=value, logs=outcome.observation.text, is_final_answer=False)
