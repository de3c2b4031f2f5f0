"""Two tasks: one tool once (single-tool), and a chain of tools with an answer."""

from ..base import Task, ToolType, register_task_iterator


def reverse_string(s: str) -> str:
    return s[::-1]


def shout(s: str) -> str:
    return s.upper()


def longest(*args: str) -> str:
    return max(args, key=len)


TOOLS = {
    "reverse_string": ToolType("reverse_string", "Reverse a string.", reverse_string,
                               "reverse_string(s: str) -> str"),
    "shout": ToolType("shout", "Upper-case a string.", shout, "shout(s: str) -> str"),
    "longest": ToolType("longest", "The longest of its arguments.", longest,
                        "longest(*args) -> str"),
}  # fmt: skip

TASKS = [
    Task("tiny/reverse", TOOLS, "Reverse 'stressed'.", "desserts", is_single_tool_task=True),
    Task(
        "tiny/longest-shouted",
        TOOLS,
        "Upper-case the longest of 'ab', 'abcd' and 'abc', reversed.",
        "DCBA",
        is_single_tool_task=False,
    ),
]
register_task_iterator(TASKS, len(TASKS))
