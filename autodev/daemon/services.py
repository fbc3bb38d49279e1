"""What a run starts beside its loop and stops when the daemon exits: the scripted model server,
the team's MCP servers, one browser per participant granted one, and the hooks and notifier of
the current config. Each is registered on the daemon's `closing` stack as it starts."""

from __future__ import annotations

import os
from contextlib import ExitStack
from typing import TYPE_CHECKING

from autodev.daemon import notify
from autodev.daemon.handles import Scripted, Settings
from autodev.guard import sandbox
from autodev.harness.hooks import Hooks
from autodev.records.events import WarningEvent
from autodev.store.events import Events
from autodev.store.paths import RunPaths

if TYPE_CHECKING:
    from autodev.config import Participant
    from autodev.harness.browser import Browser
    from autodev.harness.mcp import McpHub
    from autodev.harness.model import Model
    from autodev.harness.registry import Registry


class Services:
    def __init__(self, paths: RunPaths, settings: Settings, events: Events, closing: ExitStack):
        self.paths, self.events, self.settings = paths, events, settings
        self.model: Model | None = None  # what answers the turns and the audit instead of litellm (replay)
        self.scripted = Scripted()
        if settings.team.uses_scripted():
            from autodev.scripted import ScriptedServer, load_script

            script = load_script(settings.team.script_path(paths.team_file))
            server = ScriptedServer(script, paths.scripted_ledger, paths.run_dir / "scripted-requests.jsonl")
            server.start()
            closing.callback(server.stop)
            self.scripted = Scripted(server.base_url, script.price)
        self.mcp: McpHub | None = None  # the team's MCP servers
        if settings.team.mcp:
            from autodev.harness.mcp import McpHub as Hub

            hub = Hub(
                settings.team.mcp,
                repo=paths.repo,
                log_dir=paths.run_dir,
                groups_file=paths.run_dir / "mcp-groups.json",
                network=settings.config.command_network,
                offline=settings.sandbox.offline,
            )
            hub.start()
            self.mcp = hub
            closing.callback(lambda: (hub.stop(), self.mcp_events()))
            self.mcp_events()
        self.browsers: dict[str, Browser] = {}  # by participant, started at first use
        closing.callback(self._close_browsers)

    def mcp_events(self) -> None:
        """What the MCP servers did since last asked (started, restarted, died), as events."""
        for ev in self.mcp.drain() if self.mcp else []:
            self.events.emit(ev)

    def _close_browsers(self) -> None:
        for b in self.browsers.values():
            b.close()

    def tools(self) -> Registry:
        """Every tool a participant of this run can be given (a registry)."""
        from autodev.harness.catalog import participant_tools

        if self.mcp is None:
            return participant_tools()
        return participant_tools(self.mcp.tools(), self.mcp.capabilities())

    def browser(self, p: Participant) -> Browser | None:
        """`p`'s browser when it is granted one and this machine can run it (else its tools are
        absent; `start` said so)."""
        from autodev.harness import browser

        if "browser" not in p.tools or browser.missing():
            return None
        if p.name not in self.browsers:
            config = self.settings.config
            self.browsers[p.name] = browser.Browser(
                self.paths.run_dir / "screenshots",
                name=p.name,
                network=config.command_network if p.network is None else p.network,
                allow_hosts=tuple(config.network_allow),
            )
        return self.browsers[p.name]


def hooks_for(
    paths: RunPaths, settings: Settings, run_id: str, emit: notify.Emit
) -> tuple[Hooks, notify.Notifier]:
    """Hooks and notifications from the current config (made again when it is edited)."""
    env = {k: v for k, v in os.environ.items() if k not in settings.secret_env}
    base = {"repo": str(paths.repo), "run": run_id}
    config = settings.config
    # a hook runs where the audit's check does: the repository writable, the network as
    # commandNetwork says (guard/sandbox.py); notifyCommand runs on the host, in the run folder
    # (nothing there is the participants'), so a `python3 -c` in it imports nothing of theirs
    room = settings.sandbox.room(
        paths.repo,
        hide=sandbox.hidden(paths.run_dir),
        network=config.command_network,
        expose=[*config.sandbox_read, *config.sandbox_expose],
        secret_files=config.secret_files,
    )
    hooks = Hooks(config.hooks, paths.repo, env, emit, base, room)
    notifier = notify.Notifier(
        config.notify_command, config.notify_url, config.notify_timeout_sec, paths.run_dir, env, emit
    )
    return hooks, notifier


def save_team(paths: RunPaths, events: Events) -> int | None:
    """Keep the team just loaded in the run folder: `git clean -fdx` cannot take it, and
    `autodev init --from-run` brings it back. Its number in the run's team history (replay runs
    each turn with the team in force then), None when it could not be kept."""
    from autodev.config.project import save_team as save

    try:
        return save(paths.config_dir, paths.run_dir)
    except OSError as e:
        events.emit(WarningEvent(message=f"could not keep a copy of the team in the run folder: {e}"))
        return None
