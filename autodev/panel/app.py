"""The panel app: a header, the live Feed, Needs you and the participants table.

It only reads the run folder (events.jsonl, state.json, the team file, the daemon lock) and acts
through `autodev.actions`, the same inbox and state paths as the CLI commands. It follows the
run folder with watchfiles in a worker thread (no polling loop); a one-second clock keeps the
elapsed time and the daemon's liveness current (a killed daemon changes no file).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from datetime import UTC, datetime
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Input, Label, OptionList, RichLog, Static
from textual.widgets.option_list import Option

from autodev import actions
from autodev.panel.feed import EventTail
from autodev.paths import RunPaths
from autodev.render import event_text
from autodev.status import cap_text, spend_text

FEED_KEEP = 2000  # events kept in memory for re-rendering when folding changes
STOPPED = ("paused", "stopped", "faulted")  # states whose reason Needs you shows first
STATE_STYLE = {
    "running": "bold green",
    "waiting": "bold yellow",
    "awaiting_user": "bold yellow",
    "gated": "bold magenta",
    "auditing": "bold cyan",
    "paused": "bold yellow",
    "stopped": "bold red",
    "complete": "bold green",
    "faulted": "bold red",
}


class Prompt(ModalScreen[str | None]):
    """One line of text from the user; Enter submits, Escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, placeholder: str = "", allow_empty: bool = False):
        super().__init__()
        self.title_text, self.placeholder, self.allow_empty = title, placeholder, allow_empty

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.title_text)
            yield Input(placeholder=self.placeholder, id="prompt-input")
            yield Label("Enter sends · Escape cancels", classes="hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.value.strip() or self.allow_empty:
            self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class Confirm(ModalScreen[bool]):
    BINDINGS = [Binding("y", "yes", "Yes"), Binding("n,escape", "no", "No")]

    def __init__(self, question: str):
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.question)
            yield Label("y: yes · n: no", classes="hint")

    def action_yes(self) -> None:
        self.dismiss(True)

    def action_no(self) -> None:
        self.dismiss(False)


class PanelApp(App):
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
        Binding("q", "quit", "quit"),
    ]

    def __init__(self, paths: RunPaths, **kw):
        super().__init__(**kw)
        self.paths = paths
        self.tail = EventTail(paths.events)
        # System and audit notes (gate decisions, notices, verdicts) are on the thread but not
        # (yet) copied into events.jsonl: follow the thread's tail for those, once per seq.
        self.notes = EventTail(paths.thread, tail_records=200)
        self.shown_seqs: set[int] = set()
        self.events: deque[dict] = deque(maxlen=FEED_KEEP)
        self.expanded = False
        self.status: dict = {}
        self.raw_state: dict = {}
        self.failover: dict[str, str] = {}
        self.last_post: dict[str, int] = {}
        self.daemon_pid: int | None = None
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
        table = self.query_one("#participants", DataTable)
        table.border_title = "Participants"
        table.add_columns(
            "name", "model", "effort", "write", "turns", "credited", "silent", "tokens", "cost", "last spoke"
        )
        self.paths.ensure()  # the folder to watch (mkdir only; the panel never writes a log)
        self.reload()
        self.set_interval(1.0, self._tick)
        self._watch()
        self.loaded.set()

    # -- reading the run -----------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="watch")
    def _watch(self) -> None:
        from watchfiles import watch

        def relevant(_change, path: str) -> bool:
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
        new = self.tail.read_new()
        new += [{"type": "post", **p} for p in self.notes.read_new() if p.get("from") in ("system", "audit")]
        new = [ev for ev in sorted(new, key=lambda e: str(e.get("ts", ""))) if self._fresh(ev)]
        feed = self.query_one("#feed", RichLog)
        for ev in new:
            self._note(ev)
            self.events.append(ev)
            line = event_text(ev, self.expanded)
            if line is not None:
                feed.write(line)
        self._read_status()
        self._render_header()
        self._render_needs()
        self._render_participants()

    def _fresh(self, ev: dict) -> bool:
        """False for a post already shown (it may come from both logs)."""
        if ev.get("type") != "post" or not isinstance(ev.get("seq"), int):
            return True
        if ev["seq"] in self.shown_seqs:
            return False
        self.shown_seqs.add(ev["seq"])
        return True

    def _note(self, ev: dict) -> None:
        who = ev.get("participant")
        if ev.get("type") == "post" and isinstance(ev.get("seq"), int):
            self.last_post[ev.get("from", "?")] = ev["seq"]
        elif ev.get("type") == "failover" and who:
            self.failover[who] = ev.get("to") or "(all limited)"
        elif ev.get("type") == "turn_started" and who:
            self.failover.pop(who, None)

    def _read_status(self) -> None:
        from autodev.errors import AutodevError
        from autodev.state import StateFile
        from autodev.status import gather

        try:
            self.raw_state = StateFile(self.paths.state).read()
            self.status = gather(self.paths)
            self.daemon_pid = self.status.get("daemon_pid")
        except AutodevError as e:  # e.g. state.json damaged from outside: show it, keep going
            self.status = {
                "state": "unknown",
                "reason": {"text": e.message, "continue": e.fix},
                "needs_you": [],
                "participants": [],
                "totals": {},
            }

    def _tick(self) -> None:
        from autodev.daemon import DaemonLock

        pid = DaemonLock.holder(self.paths.lock)
        if pid != self.daemon_pid:
            self.daemon_pid = pid
            self.reload()
        else:
            self._render_header()

    # -- rendering -----------------------------------------------------------------------------

    def _render_header(self) -> None:
        d, st = self.status, self.raw_state
        state = d.get("state", "?")
        t = Text()
        t.append(f" {state} ", style=f"reverse {STATE_STYLE.get(state, 'bold')}")
        r = d.get("reason") or {}
        if r.get("text") and state != "running":
            t.append(f"  {r['text']}")
        t.append("   ")
        if self.daemon_pid:
            t.append(f"daemon pid {self.daemon_pid}", style="green")
        else:
            t.append("no daemon running (autodev start)", style="bold red")
        t.append(f"\nobjective: {d.get('objective') or '-'}")
        tot = d.get("totals") or {}
        au = d.get("audit_usage") or {}
        tokens = tot.get("tokens", 0) + au.get("prompt_tokens", 0) + au.get("completion_tokens", 0)
        cost = tot.get("cost", 0.0) + au.get("cost", 0.0)
        b = d.get("budget") or {"cost": cost, "tokens": tokens}
        t.append(
            f"\nelapsed {_elapsed(st.get('started_at'))} · turns {tot.get('turns', 0)} · "
            f"credited {tot.get('credited', 0)} · {spend_text(b)}"
        )
        sb = d.get("sandbox") or {}
        if sb.get("warning"):
            t.append(f"\nsandbox: {sb['warning']}", style="bold red")
        elif sb:
            t.append(f"\nsandbox: {sb['describe']}")
        if d.get("config_refused"):
            t.append(f"\n{d['config_refused']}", style="bold red")
        if d.get("speaking"):
            t.append(f"\nspeaking now: {d['speaking']}", style="bold")
        elif d.get("next"):
            n = d["next"]
            t.append(f"\nnext: {n.get('speaker')} ({n.get('rule')}: {n.get('why')})")
        else:
            t.append("\nnext: -")
        self.query_one("#header", Static).update(t)

    def needs(self) -> list[dict]:
        """What Needs you lists, in order: why the run stopped, then gate, question, notices."""
        d = self.status
        items = []
        r = d.get("reason") or {}
        if d.get("state") in STOPPED and r:
            items.append({"type": "stopped", "text": r.get("text", ""), "do": r.get("continue", "")})
        return items + list(d.get("needs_you") or [])

    def _render_needs(self) -> None:
        ol = self.query_one("#needs", OptionList)
        keep = ol.highlighted
        opts = []
        for i, n in enumerate(self.needs()):
            t = Text()
            if n["type"] == "stopped":
                t.append("The run stopped and why\n", style="bold red")
                t.append(f"{n['text']}\n→ {n['do'] or '-'}")
            elif n["type"] == "gate":
                t.append(f"🚧 gate {n['id']} from {n['from']}\n", style="bold magenta")
                t.append(f"{n['text'][:400]}\n→ a: approve · d: deny")
            elif n["type"] == "question":
                t.append(f"❓ question from {n['from']}\n", style="bold yellow")
                t.append(f"{n['text'][:400]}\n→ s: send your answer")
            else:
                held = ""
                if n.get("hold"):
                    held = f" · holds {n['hold']}" + (" (pinned)" if n.get("pinned") else "")
                state = "answered" if n.get("answered") else "open"
                t.append(f"📣 notice {n['id']} from {n['from']} · {state}{held}\n", style="bold yellow")
                t.append(f"{n['text'][:400]}\n→ n: answer · h: hold · l: release")
            opts.append(Option(t, id=f"{n['type']}:{n.get('id', i)}"))
        if not opts:
            opts.append(Option(Text("nothing needs you", style="dim"), id="none", disabled=True))
        ol.set_options(opts)
        if keep is not None and keep < len(opts):
            ol.highlighted = keep

    def _render_participants(self) -> None:
        table = self.query_one("#participants", DataTable)
        table.clear()
        figures = self.raw_state.get("participants", {})
        for p in self.status.get("participants") or []:
            model = str(p.get("model"))
            if p["name"] in self.failover:
                model += f" → {self.failover[p['name']]}"
            last = self.last_post.get(p["name"])
            lt = figures.get(p["name"], {}).get("last_turn")
            spoke = f"#{last}" if last else (f"turn {lt}" if lt else "-")
            table.add_row(
                p["name"],
                model,
                p.get("effort") or "-",
                "yes" if p.get("write") else "no",
                str(p["turns"]),
                str(p["credited"]),
                str(p.get("silent_streak", 0)),
                f"{p['prompt_tokens'] + p['completion_tokens']:,}",
                cap_text(p),
                spoke,
            )

    def feed_text(self) -> str:
        """The Feed as plain text (what is on screen, for tests and captures)."""
        return "\n".join(strip.text for strip in self.query_one("#feed", RichLog).lines)

    # -- acting (the same inbox and state paths as the CLI) -------------------------------------

    def _target(self, kind: str, want=lambda n: True) -> dict | None:
        """The highlighted Needs-you item if it is of `kind`, else the first one that is."""
        items = self.needs()
        hi = self.query_one("#needs", OptionList).highlighted
        if hi is not None and hi < len(items) and items[hi]["type"] == kind and want(items[hi]):
            return items[hi]
        return next((n for n in items if n["type"] == kind and want(n)), None)

    def action_approve(self) -> None:
        gate = self._target("gate")
        if not gate:
            self.notify("no open gate to approve", severity="warning")
            return
        actions.approve(self.paths, gate["id"])
        self.notify(f"approval of gate {gate['id']} sent")

    def action_deny(self) -> None:
        gate = self._target("gate")
        if not gate:
            self.notify("no open gate to deny", severity="warning")
            return

        def done(reason: str | None) -> None:
            if reason is not None:
                actions.deny(self.paths, gate["id"], reason.strip())
                self.notify(f"denial of gate {gate['id']} sent")

        self.push_screen(
            Prompt(
                f"Deny gate {gate['id']} from {gate['from']}: why? (may be empty)",
                "the reason, for the declarer",
                allow_empty=True,
            ),
            done,
        )

    def action_answer(self) -> None:
        n = self._target("notice", lambda n: not n.get("answered")) or self._target("notice")
        if not n:
            self.notify("no notice to answer", severity="warning")
            return

        def done(text: str | None) -> None:
            if text:
                actions.answer(self.paths, n["id"], text)
                self.notify(f"answer to notice {n['id']} sent")

        self.push_screen(
            Prompt(f"Answer notice {n['id']} from {n['from']}: {n['text'][:120]}", "your answer"), done
        )

    def action_hold(self) -> None:
        n = self._target("notice", lambda n: n.get("hold") and not n.get("pinned"))
        if not n:
            self.notify("no unpinned hold to pin", severity="warning")
            return
        actions.notice(self.paths, n["id"], "hold")
        self.notify(f"hold of notice {n['id']} pinned")

    def action_release(self) -> None:
        n = self._target("notice", lambda n: bool(n.get("hold")))
        if not n:
            self.notify("no hold to release", severity="warning")
            return
        actions.notice(self.paths, n["id"], "release")
        self.notify(f"release of notice {n['id']} sent")

    def action_send(self) -> None:
        def done(text: str | None) -> None:
            if text:
                msg = actions.send(self.paths, text)
                self.notify(f"sent ({msg['id']})")

        self.push_screen(Prompt("Message to the team", "your message"), done)

    def _control(self, action: str) -> None:
        actions.control(self.paths, action)
        note = "" if self.daemon_pid else " (no daemon is running: it applies at the next start)"
        self.notify(f"{action} requested{note}")

    def action_pause(self) -> None:
        self._control("pause")

    def action_resume(self) -> None:
        self._control("resume")

    def action_stop(self) -> None:
        def done(yes: bool | None) -> None:
            if yes:
                self._control("stop")

        self.push_screen(Confirm("Stop the run after the turn in flight?"), done)

    def action_expand(self) -> None:
        self.expanded = not self.expanded
        feed = self.query_one("#feed", RichLog)
        feed.clear()
        for ev in self.events:
            line = event_text(ev, self.expanded)
            if line is not None:
                feed.write(line)
        self.notify("long posts expanded" if self.expanded else "long posts folded")

    async def action_quit(self) -> None:
        self._stop.set()
        self.exit()

    def on_unmount(self) -> None:
        self._stop.set()


def _elapsed(started: str | None) -> str:
    if not started:
        return "-"
    try:
        t0 = datetime.strptime(started, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return "-"
    s = max(0, int(time.time() - t0))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def run(repo: Path) -> None:
    PanelApp(RunPaths(repo)).run()
