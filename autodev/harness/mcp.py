"""The team's MCP servers: started with the daemon, restarted when they die, stopped with it.

Each `[mcp.NAME]` server runs over stdio through the official `mcp` SDK (which starts it in a
session of its own and stops its whole process group). The SDK is async; the daemon is not, so
the servers live on an event loop in one background thread and the turn calls into it.

A server's tools join the tool registry as ``NAME__TOOL`` with its raw JSON Schema; a tool
annotated ``readOnlyHint`` is replay-safe. While a server is down its tools stay offered and
answer "unavailable", and the server is started again after ``restart_sec`` (doubling, up to a
minute), so the run goes on.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from autodev.errors import ToolError, ToolSetupError
from autodev.guard import keys
from autodev.harness.deadline import wait_future
from autodev.harness.mcp_groups import find_group, reap_groups, save_groups
from autodev.harness.mcp_results import describe, text_of
from autodev.harness.registry import Tool, ToolEnv
from autodev.host.procgroup import kill_group
from autodev.records.events import (
    Event,
    McpServerDownEvent,
    McpServerReapedEvent,
    McpServerRestartedEvent,
    McpServerStartedEvent,
)

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import CallToolResult

    from autodev.config import McpServer
    from autodev.harness.scope import Scope

_MAX_BACKOFF = 60.0
STDERR_LINES = 8  # of a server that failed to start, shown in the error
_PING_SEC = 1.0  # how often a quiet server is checked for life
_NAME_OK = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """How a server's tool is offered: ``server__tool`` (characters providers refuse become _)."""
    return f"{server}__{_NAME_OK.sub('_', tool)}"[:64]


def start_problem(name: str, command: str, cwd: Path) -> str | None:
    """Why `command` cannot start, found without starting it (for `autodev start`)."""
    if not cwd.is_dir():
        return f"MCP server {name!r}: its folder {cwd} does not exist"
    if shutil.which(command, path=os.environ.get("PATH")) is None and not (
        os.sep in command and os.access(cwd / command, os.X_OK)
    ):
        return f"MCP server {name!r}: command {command!r} was not found on PATH"
    return None


def start_fix(name: str) -> str:
    return (
        f"install the server or correct [mcp.{name}] command/args in .autodev/team.toml "
        f"(or remove the [mcp.{name}] table), then start again"
    )


@dataclass
class _Server:
    name: str
    capability: str
    command: str
    args: list[str]
    env: dict[str, str]
    cwd: Path
    timeout: float
    restart: float
    session: ClientSession | None = None
    tools: list[Tool[str]] = field(default_factory=list[Tool[str]])
    up: bool = False
    error: str = ""
    ready: threading.Event = field(default_factory=threading.Event)
    died: asyncio.Event | None = None
    pgid: int | None = None  # its process group (the SDK starts it in a session of its own)


class McpHub:
    """The team's MCP servers on one background event loop."""

    def __init__(
        self,
        servers: Mapping[str, McpServer],
        *,
        repo: Path,
        log_dir: Path | None = None,
        groups_file: Path | None = None,
        ping_sec: float = _PING_SEC,
        network: bool = True,
        offline: Callable[[list[str]], list[str]] | None = None,
    ):
        """`network`: the default for a server whose config leaves `network` unset (the config's
        commandNetwork); a server without it is started through `offline` (Sandbox.offline)."""
        self._servers: dict[str, _Server] = {}
        for name, cfg in servers.items():
            argv = [cfg.command, *cfg.args]
            if offline is not None and not (network if cfg.network is None else cfg.network):
                argv = offline(argv)
            self._servers[name] = _Server(
                name=name,
                capability=cfg.capability or name,
                command=argv[0],
                args=argv[1:],
                # Only the variables the team lists; the SDK adds PATH, HOME and the like.
                # Secrets come from the key store: the daemon's environment holds none.
                env={k: v for k in cfg.env if (v := keys.get(k)) is not None},
                cwd=(repo / cfg.cwd) if cfg.cwd else repo,
                timeout=cfg.timeout_sec,
                restart=cfg.restart_sec,
            )
        self._events: list[Event] = []
        self._events_lock = threading.Lock()
        self._log_dir = log_dir  # each server's stderr goes to mcp-<name>.log there
        self._groups_file = groups_file
        self._ping = ping_sec
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        self._tasks: list[asyncio.Task[None]] = []

    # -- life

    def start(self, timeout: float = 30.0) -> None:
        """Start every server and wait for its tool list; McpStartError names one that failed."""
        self._reap()
        if not self._servers:
            return
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="mcp-servers", daemon=True)
        self._thread.start()
        ready.wait(10)
        for s in self._servers.values():
            if not s.ready.wait(timeout):
                s.error = s.error or f"it did not answer within {timeout:g} s"
            if not s.up:
                self.stop()
                raise ToolSetupError(
                    f"MCP server {s.name!r} ({' '.join([s.command, *s.args])}) failed to start: {s.error}"
                    + self._stderr_tail(s.name),
                    start_fix(s.name),
                )

    def log_path(self, name: str) -> Path | None:
        """Where server `name`'s stderr goes (None: nowhere)."""
        return self._log_dir / f"mcp-{_NAME_OK.sub('_', name)}.log" if self._log_dir else None

    def _stderr_tail(self, name: str, lines: int = STDERR_LINES) -> str:
        """The last lines the server wrote to stderr, and where the rest is."""
        path = self.log_path(name)
        if path is None:
            return ""
        try:
            with open(path, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - 8192))
                tail = f.read().decode("utf-8", errors="replace").splitlines()[-lines:]
        except OSError:
            tail = []
        shown = "".join(f"\n    {line}" for line in tail if line.strip())
        return (f"\n  its stderr, last lines:{shown}" if shown else "\n  it wrote nothing to stderr") + (
            f"\n  full log: {path}"
        )

    def stop(self) -> None:
        """Stop every server (its whole process group) and the loop."""
        loop, stop = self._loop, self._stop
        if loop is None or stop is None:
            return
        loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(15)
        self._loop = None
        if self._groups_file is not None:
            self._groups_file.unlink(missing_ok=True)

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._main(ready))
        finally:
            loop.close()

    async def _main(self, ready: threading.Event) -> None:
        self._stop = asyncio.Event()
        self._tasks = [asyncio.create_task(self._keep(s)) for s in self._servers.values()]
        ready.set()
        await self._stop.wait()
        for s in self._servers.values():
            if s.died is not None:
                s.died.set()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _keep(self, s: _Server) -> None:
        """Run one server; when it dies, start it again after a pause that grows."""
        delay = s.restart
        first = True
        assert self._stop is not None
        while not self._stop.is_set():
            began = asyncio.get_running_loop().time()
            try:
                await self._serve(s, first)
            except Exception as e:  # noqa: BLE001 - any failure of the server is reported as such
                s.error = describe(e)
            s.up, s.session = False, None
            kill_group(s.pgid)
            s.pgid = None
            s.ready.set()
            if self._stop.is_set():
                return
            if first and not s.tools:
                return  # never started: `start` reports it and the daemon does not run
            self._emit(McpServerDownEvent(server=s.name, error=s.error[:300], restart_in=delay))
            if asyncio.get_running_loop().time() - began > 30:
                delay = s.restart  # it ran a while: this is a new failure, not a crash loop
            try:
                await asyncio.wait_for(self._stop.wait(), delay)
                return
            except TimeoutError:
                pass
            delay = min(delay * 2, _MAX_BACKOFF)
            first = False

    async def _serve(self, s: _Server, first: bool) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(command=s.command, args=s.args, env=s.env, cwd=str(s.cwd))
        path = self.log_path(s.name)
        errlog = open(path, "a") if path else open(os.devnull, "w")  # noqa: SIM115
        try:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    s.pgid = find_group(s.command, s.args, [o.pgid for o in self._servers.values()])
                    self._save_groups()
                    await asyncio.wait_for(session.initialize(), s.timeout)
                    s.tools = await self._list(s, session)
                    s.session, s.up, s.error = session, True, ""
                    s.died = asyncio.Event()
                    s.ready.set()
                    up = McpServerStartedEvent if first else McpServerRestartedEvent
                    self._emit(up(server=s.name, tools=[t.name for t in s.tools]))
                    await self._watch(s, session)
        finally:
            errlog.close()

    async def _watch(self, s: _Server, session: ClientSession) -> None:
        """Return when the server stops answering (or on stop)."""
        assert s.died is not None and self._stop is not None
        while not s.died.is_set() and not self._stop.is_set():
            try:
                await asyncio.wait_for(s.died.wait(), self._ping)
            except TimeoutError:
                try:
                    await asyncio.wait_for(session.send_ping(), max(self._ping, 5.0))
                except Exception as e:  # noqa: BLE001
                    s.error = f"it stopped answering ({describe(e)})"
                    return
        if not self._stop.is_set():
            s.error = s.error or "it stopped answering"

    async def _list(self, s: _Server, session: ClientSession) -> list[Tool[str]]:
        from mcp.types import PaginatedRequestParams

        out: list[Tool[str]] = []
        cursor = None
        while True:
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await asyncio.wait_for(session.list_tools(params=params), s.timeout)
            for t in page.tools:
                ann = t.annotations
                out.append(
                    Tool(
                        tool_name(s.name, t.name),
                        (t.description or t.title or t.name)[:1024],
                        s.capability,
                        self._handler(s.name, t.name),
                        schema=dict(t.input_schema or {"type": "object", "properties": {}}),
                        replay_safe=bool(ann and ann.read_only_hint),
                    )
                )
            cursor = page.next_cursor
            if not cursor:
                return out

    def _emit(self, ev: Event) -> None:
        with self._events_lock:
            self._events.append(ev)

    def drain(self) -> list[Event]:
        """Events of the servers since the last drain (the daemon writes them from its thread)."""
        with self._events_lock:
            out, self._events = self._events, []
        return out

    def _save_groups(self) -> None:
        if self._groups_file is not None:
            save_groups(self._groups_file, {s.name: s.pgid for s in self._servers.values() if s.pgid})

    def _reap(self) -> None:
        if self._groups_file is not None:
            for name, pgid in reap_groups(self._groups_file):
                self._emit(McpServerReapedEvent(server=name, pgid=pgid))

    # -- use

    def tools(self) -> list[Tool[str]]:
        """Every server's tools as last listed (a server that is down keeps its list)."""
        return [t for s in self._servers.values() for t in s.tools]

    def capabilities(self) -> list[str]:
        return sorted({s.capability for s in self._servers.values()})

    def _handler(self, server: str, tool: str) -> Callable[..., str]:
        def handler(env: ToolEnv, **args: object) -> str:
            return self.call(server, tool, args, env.workspace)

        return handler

    def call(self, server: str, tool: str, args: dict[str, object], ws: Scope | None = None) -> str:
        """Call one tool; its text result. ToolError when the server is down or the tool failed,
        or when the turn must end first (`ws`: the turn's Workspace, its deadline and `stop`)."""
        s = self._servers[server]
        shown = tool_name(server, tool)
        loop = self._loop
        if not s.up or s.session is None or loop is None:
            raise ToolError(
                f"{shown} is unavailable: its MCP server {server!r} is not running ({s.error or 'stopped'}); "
                "it is being restarted, so try again later or carry on without it"
            )
        future = asyncio.run_coroutine_threadsafe(self._call(s, tool, args), loop)
        why = wait_future(future, ws.time_for(s.timeout + 5) if ws else s.timeout + 5, _stopping(ws))
        if why:
            future.cancel()
            raise ToolError(f"{shown}: {why}")
        try:
            result = future.result()
        except TimeoutError:
            raise ToolError(f"{shown}: no answer within {s.timeout:g} s") from None
        except Exception as e:  # noqa: BLE001 - the server's failure, told to the model
            if s.died is not None and loop.is_running():
                loop.call_soon_threadsafe(s.died.set)
            raise ToolError(
                f"{shown} is unavailable: its MCP server {server!r} failed during the call "
                f"({describe(e)}); it is being restarted"
            ) from None
        text = text_of(result)
        if getattr(result, "is_error", False):
            raise ToolError(f"{shown}: {text}")
        return text

    async def _call(self, s: _Server, tool: str, args: dict[str, object]) -> CallToolResult:
        if s.session is None:  # it went down since `call` looked
            raise ConnectionError("its session closed")
        return await asyncio.wait_for(s.session.call_tool(tool, args), s.timeout)


def _stopping(ws: Scope | None) -> Callable[[], bool]:
    return ws.stopping_now if ws is not None else lambda: False
