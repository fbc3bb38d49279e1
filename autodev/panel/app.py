"""The panel app: a header, the live Feed, Needs you and the participants table.

It only reads the run folder (events.jsonl, state.json, the team file, the daemon lock) and acts (`acting`)
through `autodev.user.actions`, the same inbox and state paths as the CLI commands. It follows the
run folder with watchfiles in a worker thread (no polling loop); a one-second clock keeps the
elapsed time and the daemon's liveness current (a killed daemon changes no file).
"""

from __future__ import annotations

import os
import sys
import threading
from collections import deque
from pathlib import Path
from typing import cast

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import DataTable, Footer, OptionList, RichLog, Static
from textual.widgets.option_list import Option

from autodev.panel import views
from autodev.panel.acting import Acting
from autodev.panel.dialogs import Confirm, Prompt
from autodev.panel.feed import EventTail
from autodev.records.events import AnyEvent, FailoverEvent, PostEvent, TurnStartedEvent
from autodev.records.state import Reason, RunState
from autodev.store.paths import RunPaths
from autodev.user.events_view import feed as feed_line
from autodev.user.events_view import shown_event
from autodev.user.status import Need, Status

__all__ = ["Confirm", "PanelApp", "Prompt", "run"]

FEED_KEEP = 2000  # events kept in memory for re-rendering when folding changes


class PanelApp(Acting):
    TITLE = "autodev panel"
    CSS = """
    #header { height: auto; padding: 0 1; background: $boost; }
    #body { height: 1fr; }
    #feed { width: 3fr; border: round $primary; }
    #needs { width: 2fr; height: 1fr; border: round $warning; }
    #participants { height: auto; max-height: 12; border: round $secondary; }
    Prompt, Confirm { align: center middle; }
    #dialog { width: 70%; height: auto; padding: 1 2; border: thick $accent; background: $surface; }
    .hint { color: $text-muted; }
    /* Toasts inside the bordered boxes: above the footer and the boxes' bottom border, off their right edge. */
    ToastRack { margin: 0 2 2 0; }
    """
    BINDINGS = [
        Binding("a", "approve", "approve"),
        Binding("d", "deny", "deny"),
        Binding("n", "answer", "answer"),
        Binding("h", "hold", "hold"),
        Binding("l", "release", "release"),
        Binding("s", "send", "send"),
        Binding("p", "pause", "pause"),
        Binding("r", "resume", "resume"),
        Binding("x", "stop", "stop"),
        Binding("e", "expand", "expand"),
        Binding("w", "rewind", "rewind"),
        Binding("q", "quit", "quit"),
    ]

    def __init__(self, paths: RunPaths):
        super().__init__()
        self.paths = paths
        self.tail = EventTail(paths.events)
        # System and audit notes (gate decisions, notices, verdicts) are on the thread but not
        # (yet) copied into events.jsonl: follow the thread's tail for those, once per seq.
        self.notes = EventTail(paths.thread, tail_records=200)
        self.shown_seqs: set[int] = set()
        self.events: deque[AnyEvent] = deque(maxlen=FEED_KEEP)  # as read once, for re-rendering
        self.expanded = False
        from autodev.store.thread import read_live

        self.live = read_live(paths.thread)  # posts a rewind superseded are struck through
        self.status = Status()
        self.raw_state: RunState = RunState()
        self.failover: dict[str, str] = {}
        self.last_post: dict[str, int] = {}
        self.daemon_pid: int | None = None
        self.group: list[str] = []  # the repository's best-of group, side by side (docs/best-of.md)
        self.loaded = threading.Event()  # set after the first full render (tests, benchmark)
        self._stop = threading.Event()

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="header")
        yield DataTable(id="participants", cursor_type="none", zebra_stripes=True)
        with Horizontal(id="body"):
            yield RichLog(id="feed", wrap=True, markup=False, auto_scroll=True, max_lines=FEED_KEEP * 2)
            yield OptionList(id="needs")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#feed").border_title = "Feed"
        self.query_one("#needs").border_title = "Needs you"
        table = self._table()
        table.border_title = "Participants"
        table.add_columns(*views.PARTICIPANT_COLUMNS)
        self.paths.ensure()  # the folder to watch (mkdir only; the panel never writes a log)
        self._read_group()
        self.reload()
        self.set_interval(1.0, self._tick)
        self._watch()
        self.loaded.set()

    # -- reading the run -----------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="watch")
    def _watch(self) -> None:
        from watchfiles import watch

        def relevant(_change: object, path: str) -> bool:
            return path.endswith(("/events.jsonl", "/state.json"))

        while not self._stop.is_set():
            try:
                for _ in watch(
                    self.paths.run_dir,
                    watch_filter=relevant,
                    stop_event=self._stop,
                    debounce=40,
                    step=20,
                    recursive=False,
                ):
                    self.call_from_thread(self.reload)
            except Exception:  # the folder vanished or the watcher failed: retry shortly
                self._stop.wait(1.0)

    def reload(self) -> None:
        """Read what changed: new events into the Feed, then state.json into the rest."""
        if self._quitting():
            return  # quitting: a reload the watcher queued before `q` is not worth waiting for
        recs = self.tail.read_new()
        recs += [{"type": "post", **p} for p in self.notes.read_new() if p.get("from") in ("system", "audit")]
        read = [ev for rec in recs if (ev := shown_event(rec)) is not None]
        new = [ev for ev in sorted(read, key=lambda e: e.ts) if self._fresh(ev)]
        feed = self.query_one("#feed", RichLog)
        if any(isinstance(ev, PostEvent) and ev.post.rewind for ev in new):
            self.events += new
            for ev in new:
                self._note(ev)
            self._redraw()  # a rewind strikes through posts already on screen
        else:
            for ev in new:
                self._note(ev)
                self.events.append(ev)
                line = self._line(ev)
                if line is not None:
                    feed.write(line)
        self._read_status()
        self._render_header()
        self._render_needs()
        self._render_participants()

    def _fresh(self, ev: AnyEvent) -> bool:
        """False for a post already shown (it may come from both logs)."""
        if not isinstance(ev, PostEvent):
            return True
        if ev.post.seq in self.shown_seqs:
            return False
        self.shown_seqs.add(ev.post.seq)
        return True

    def _note(self, ev: AnyEvent) -> None:
        """Who spoke last and which failover model each participant is on."""
        match ev:
            case PostEvent(post=post):
                self.last_post[post.from_] = post.seq
            case FailoverEvent(participant=str(who)) if who:
                self.failover[who] = ev.to or "(all limited)"
            case TurnStartedEvent(participant=str(who)) if who:
                self.failover.pop(who, None)
            case _:
                pass  # the other kinds change neither

    def _read_status(self) -> None:
        from autodev.errors import AutodevError
        from autodev.store.state import StateFile
        from autodev.user.status import gather

        try:
            self.raw_state = StateFile(self.paths.state).read()
            self.status = gather(self.paths)
            self.daemon_pid = self.status.daemon_pid
        except AutodevError as e:  # e.g. state.json damaged from outside: show it, keep going
            why = Reason.model_validate({"code": "fault", "text": e.message, "continue": e.fix})
            self.status = Status(state="unknown", reason=why)

    def _quitting(self) -> bool:
        """True once the panel quits. Textual removes the screens before it stops the app's
        timers, so a tick (or a queued reload) can land when the widgets are already gone."""
        return self._stop.is_set() or not self.is_running

    def _tick(self) -> None:
        from autodev.store.lock import DaemonLock

        if self._quitting():
            return
        if len(self.screen_stack) > 1:
            return  # a prompt is open: the panel's widgets are not on it; the next tick after it closes
        pid = DaemonLock.holder(self.paths.lock)
        self._read_group()  # the group's runs live in folders of their own: read each second
        if pid != self.daemon_pid:
            self.daemon_pid = pid
            self.reload()
        else:
            self._render_header()

    def _read_group(self) -> None:
        from autodev.user.group_view import panel_lines

        self.group = panel_lines(self.paths.repo)

    # -- rendering (what is shown comes from `views`) -------------------------------------------

    def _render_header(self) -> None:
        self.query_one("#header", Static).update(
            views.header(self.status, self.raw_state, self.daemon_pid, self.group)
        )

    def needs(self) -> list[Need]:
        """What Needs you lists, in order: why the run stopped, then gate, question, notices."""
        return views.needs(self.status)

    def _render_needs(self) -> None:
        ol = self.query_one("#needs", OptionList)
        keep = ol.highlighted
        opts = [
            Option(views.need_text(n), id=f"{n.type}:{n.id if n.id is not None else i}")
            for i, n in enumerate(self.needs())
        ]
        if not opts:
            opts.append(Option(Text("nothing needs you", style="dim"), id="none", disabled=True))
        ol.set_options(opts)
        if keep is not None and keep < len(opts):
            ol.highlighted = keep

    def _table(self) -> DataTable[str]:
        # textual's query_one checks a class (DataTable), never its cells' type: strings here
        return cast("DataTable[str]", self.query_one("#participants", DataTable))

    def _render_participants(self) -> None:
        table = self._table()
        table.clear()
        for row in views.participant_rows(self.status, self.raw_state, self.failover, self.last_post):
            table.add_row(*row)

    def feed_text(self) -> str:
        """The Feed as plain text (what is on screen, for tests and captures)."""
        return "\n".join(strip.text for strip in self.query_one("#feed", RichLog).lines)

    def _line(self, ev: AnyEvent) -> Text | None:
        gone = isinstance(ev, PostEvent) and not self.live.is_live(ev.post.seq)
        return feed_line(ev, self.expanded, gone)

    def _redraw(self) -> None:
        from autodev.store.thread import read_live

        self.live = read_live(self.paths.thread)
        feed = self.query_one("#feed", RichLog)
        feed.clear()
        for ev in self.events:
            line = self._line(ev)
            if line is not None:
                feed.write(line)

    def action_expand(self) -> None:
        self.expanded = not self.expanded
        self._redraw()
        self.notify("long posts expanded" if self.expanded else "long posts folded")

    async def action_quit(self) -> None:
        self._stop.set()
        self.exit()

    def on_unmount(self) -> None:
        self._stop.set()


def run(repo: Path) -> None:
    PanelApp(RunPaths(repo)).run()
    # Quitting ends here: every action the panel took was written whole (atomically) when it
    # returned, and it keeps no log. The interpreter's teardown of a Textual app (its widgets,
    # a full Feed, the watcher's executor joined) took most of the time `q` took to give the
    # terminal back; there is nothing in it to wait for.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
