"""The browser tools as a model is offered them: their arguments, and the handler that hands
each call to the participant's `Browser` (harness/browser.py)."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import Field

from autodev.errors import ToolError
from autodev.harness.browser import INSTALL_HINT
from autodev.harness.context import TurnToolEnv
from autodev.harness.registry import Args, Boolean, Integer, String, Tool, ToolEnv


class OpenArgs(Args):
    url: String = Field(description="http:// or https:// URL to open")


class NoArgs(Args):
    pass


class RefArgs(Args):
    ref: Integer = Field(ge=1, description="an element's ref from browser_read()")


class TypeArgs(Args):
    ref: Integer = Field(ge=1, description="an input's ref from browser_read()")
    text: String = Field(description="the text to put in it (replaces what is there)")
    submit: Boolean = Field(default=False, description="press Enter afterwards (submits most forms)")


def _on_browser(method: str) -> Callable[..., str]:
    def handler(env: ToolEnv, **kwargs: object) -> str:
        browser = env.turn.tools.browser if isinstance(env, TurnToolEnv) else None
        if browser is None:
            raise ToolError(f"the browser is not available here; {INSTALL_HINT}")
        return browser.run(method, env.workspace, **kwargs)

    return handler


def _tool(name: str, method: str, args: type[Args], description: str, safe: bool = False) -> Tool[str]:
    return Tool(name, description, "browser", _on_browser(method), args=args, replay_safe=safe)


BROWSER_TOOLS: tuple[Tool[str], ...] = (
    _tool("browser_open", "open", OpenArgs, "Open a URL in the browser (headless Chromium)."),
    _tool(
        "browser_read",
        "read",
        NoArgs,
        "The current page: title, URL, its text, and its interactive elements, each with a ref.",
        safe=True,
    ),
    _tool("browser_click", "click", RefArgs, "Click the element with this ref (from browser_read)."),
    _tool(
        "browser_type",
        "type",
        TypeArgs,
        "Fill the input with this ref (from browser_read) with text; submit=true presses Enter.",
    ),
    _tool("browser_back", "back", NoArgs, "Go back to the previous page."),
    _tool(
        "browser_screenshot",
        "screenshot",
        NoArgs,
        "Save a PNG screenshot of the page in the run folder; returns its path.",
        safe=True,
    ),
)
