"""The agent harness: one loop for code, JSON and text actions, real and scripted models, and the
task-suite format outside suites plug into (see :mod:`safeexec.harness.loop`)."""

from __future__ import annotations

from safeexec.harness.agents import AGENTS, make_agent, reference_trace
from safeexec.harness.formats import FORMATS, ActionFormat, ParsedAction
from safeexec.harness.loop import EndReason, RunOptions, TaskResult, run_task
from safeexec.harness.models import (
    Message,
    Model,
    ModelError,
    RecordingModel,
    ReplayModel,
    Reply,
    ScriptedModel,
    TokenUsage,
    ToolCall,
    TurnKey,
)
from safeexec.harness.runner import SuiteRun, run_suite, summarize
from safeexec.harness.suite import Suite, Task, answer_checks, load_suite

__all__ = [
    "AGENTS",
    "FORMATS",
    "ActionFormat",
    "EndReason",
    "Message",
    "Model",
    "ModelError",
    "ParsedAction",
    "RecordingModel",
    "ReplayModel",
    "Reply",
    "RunOptions",
    "ScriptedModel",
    "Suite",
    "SuiteRun",
    "Task",
    "TaskResult",
    "TokenUsage",
    "ToolCall",
    "TurnKey",
    "answer_checks",
    "load_suite",
    "make_agent",
    "reference_trace",
    "run_suite",
    "run_task",
    "summarize",
]
