"""Coding-agent CLIs (Claude Code, Codex, Copilot CLI, Gemini CLI) as participants: the adapters,
the subprocess runner, the MCP server that gives them the thread tools, and the agent turn."""
