""" "Run code in safeexec" as a model-API tool: definitions and dispatch, by their public names.

``openai_tool(api="chat" | "responses")`` and ``anthropic_tool()`` give the ``tools`` list
(``run_code`` plus one definition per granted ``ToolSpec``); ``dispatch(session, call)`` runs one
tool call of the model (an SDK object or its dict) and returns the tool-result message in that
API's shape; ``dispatch_many`` does one turn's calls. The one implementation lives in
:mod:`safeexec.faces.tooldefs`; this module only names it.
"""

from __future__ import annotations

from safeexec.faces.tooldefs import (
    RUN_CODE,
    Api,
    anthropic_tool,
    dispatch,
    dispatch_many,
    openai_tool,
)

__all__ = ["RUN_CODE", "Api", "anthropic_tool", "dispatch", "dispatch_many", "openai_tool"]
