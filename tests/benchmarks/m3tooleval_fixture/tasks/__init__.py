"""A two-task fixture in M3ToolEval's task-package format (written for these tests)."""

from . import base
from .base import ActionMode, Task, ToolType
from .impl import tiny

__all__ = ["ActionMode", "Task", "ToolType", "base", "tiny"]
