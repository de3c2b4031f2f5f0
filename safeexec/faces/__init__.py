"""Faces for agent harnesses: each a thin translation between a harness's types and a Session.

- :mod:`safeexec.faces.tooldefs` — "run code in safeexec" tool definitions for the OpenAI
  (chat completions, Responses) and Anthropic Messages APIs, and ``dispatch`` of their tool calls;
- :mod:`safeexec.faces.mcp_server` — an MCP server (the official ``mcp`` SDK; extra ``mcp``);
- :mod:`safeexec.faces.smolagents_executor` — a smolagents ``PythonExecutor`` (extra ``adapters``);
- :mod:`safeexec.faces.langchain_tool` — a LangChain ``BaseTool`` (extra ``adapters``).

Each SDK is imported only by its own module, so the others work without it.
"""
