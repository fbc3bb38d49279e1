"""Every tool a participant can be given, in one registry: the thread tools, the workspace tools,
the browser's, and the tools of the team's MCP servers."""

from __future__ import annotations

from collections.abc import Iterable

from autodev.harness.browser_tools import BROWSER_TOOLS
from autodev.harness.registry import Registry, Tool
from autodev.harness.thread_tools import THREAD_TOOLS
from autodev.harness.tools import WORKSPACE_TOOLS

BUILTIN = Registry((*THREAD_TOOLS, *WORKSPACE_TOOLS, *BROWSER_TOOLS))


def participant_tools(extra: Iterable[Tool[str]] = (), capabilities: Iterable[str] = ()) -> Registry:
    """The built-in tools plus `extra` (MCP servers', the browser's), with every capability a
    notice may name, even one whose tools are absent right now."""
    return Registry((*BUILTIN, *extra), capabilities=capabilities)
