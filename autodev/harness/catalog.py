"""Every tool a participant can be given, in one registry: the thread tools, the workspace tools,
and the capabilities tools can join (``browser``)."""

from __future__ import annotations

from autodev.harness.registry import Registry
from autodev.harness.thread_tools import THREAD_TOOLS
from autodev.harness.tools import WORKSPACE_TOOLS

BUILTIN = Registry((*THREAD_TOOLS, *WORKSPACE_TOOLS), capabilities=("browser",))
