"""The run loop: one daemon per repository.

At every turn boundary it re-reads the team file, applies control requests (pause, resume,
stop) and the inbox (user messages become `user` posts exactly once), asks the scheduler who
speaks, runs that participant's turn, and applies the post's effects (credit, question, wait,
gate, audit). Everything it knows lives in the logs and state.json, so a restart continues.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import sys
import time
from pathlib import Path

from autodev import budget, inbox, keys, notify, prompts, reasons, runs, scheduler, userfiles
from autodev import config as cfgmod
from autodev import rebuild as rebuildmod
from autodev import sandbox as sandboxmod
from autodev.effects import EffectsMixin
from autodev.errors import AutodevError, ConfigError, DaemonRunningError, LogWriteError, ProviderError
from autodev.events import Events
from autodev.harness import providers
from autodev.harness.prompt import build_turn_prompt
from autodev.hooks import Hooks
from autodev.journal import Journal
from autodev.notices import NoticesMixin
from autodev.paths import RunPaths, autodev_home, git_head
from autodev.reasons import reason
from autodev.records import check_harness
from autodev.redact import Redactor
from autodev.state import StateFile
from autodev.thread import TAIL, Thread, now_ts

IDLE = ("awaiting_user", "gated", "paused")
IDLE_RECHECK_S = 1.0  # longest a change can go unseen if it lands before the watch is armed
EXIT_COMPLETE, EXIT_FAILED, EXIT_NEEDS_USER = 0, 1, 3
USER_KEEP = 10  # user messages kept in state for the audit's view of the objective


def load_settings(paths: RunPaths) -> tuple[cfgmod.RunConfig, cfgmod.Team]:
    return cfgmod.load_config(paths.config_file), cfgmod.load_team(paths.team_file)


class DaemonLock:
    """An flock held for the daemon's lifetime; the kernel releases it if the process dies."""

    def __init__(self, path: Path):
        self.path = path
        self.fd = -1

    def acquire(self) -> None:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.pread(self.fd, 32, 0).decode(errors="replace").strip()
            os.close(self.fd)
            self.fd = -1  # release() must not close it again (EBADF would hide the real error)
            raise DaemonRunningError(
                f"a daemon (pid {pid or '?'}) is already running this repository",
                "use `autodev status`, or `autodev stop` first",
            ) from None
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing the descriptor drops the flock
            self.fd = -1

    @staticmethod
    def holder(path: Path) -> int | None:
        """The pid of the running daemon, or None when no daemon holds the lock."""
        if not path.exists():
            return None
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raw = os.pread(fd, 32, 0).decode(errors="replace").strip()
            return int(raw) if raw.isdigit() else -1
        finally:
            os.close(fd)
        return None


class Daemon(EffectsMixin, NoticesMixin):
    def __init__(self, repo: Path, *, until_idle: bool = False, out=None, staged: Path | None = None):
        self.paths = RunPaths(repo)
        self.staged = staged  # the objective `start` staged: queued once this daemon holds the lock
        self.until_idle = until_idle
        self.out = out  # optional callback(post) for printing as the thread grows
        self.user_stamp = userfiles.stamp(self.paths.config_dir)  # the .autodev/ honoured now
        self.config, self.team = load_settings(self.paths)
        self.sandbox = sandboxmod.resolve(self.config.sandbox)
        self.server = None
        self.scripted_price = None
        self.mcp = None  # the team's MCP servers (harness.mcp.McpHub), started by open()
        self.browsers: dict = {}  # participant -> harness.browser.Browser, started at first use

    # -- set-up ------------------------------------------------------------------------------

    @property
    def overrides(self) -> Path:
        """The prompt overrides in use: the copy taken when .autodev/ was last accepted."""
        return self.paths.run_dir / "accepted-prompts"

    def open(self) -> None:
        self.paths.ensure()
        self.lock = DaemonLock(self.paths.lock)
        self.lock.acquire()
        if self.staged is not None:
            inbox.publish(self.staged)
        self.secret_env = self._key_names()
        self.redact = Redactor(keys.values(self.secret_env))
        userfiles.snapshot_prompts(self.paths.prompt_overrides, self.overrides)
        self.state = StateFile(self.paths.state, redact=self.redact)
        rebuilt = rebuildmod.missing(self.paths)
        if rebuilt:  # never a silent fresh run: the logs say what the run was
            self.state.update(lambda s: {**s, **rebuildmod.rebuild(self.paths), "version": s["version"]})
        st = self.state.read()
        self.run_id = st.get("run_id") or secrets.token_hex(4)
        self.thread = Thread(self.paths.thread, redact=self.redact)
        self.events = Events(self.paths.events, self.run_id, self.redact)
        self.hlog = Journal(self.paths.harness_log, redact=self.redact, schema=check_harness)
        if rebuilt:
            self.events.emit(
                "warning", message="state.json was missing: the run's state was rebuilt from its logs"
            )
        if self.team.uses_scripted():
            self._start_scripted()
        if self.team.mcp:
            self._start_mcp()
        head = git_head(self.paths.repo)
        warn: list[str] = []

        def init(s: dict) -> dict:
            s.setdefault("run_id", self.run_id)
            s.setdefault("started_at", now_ts())
            s.setdefault("base_head", head)
            s.setdefault("turn", 0)
            s.setdefault("cursors", {})
            s.setdefault("participants", {})
            s.setdefault("talk_turns", 0)
            s.setdefault("audits", 0)
            s.setdefault("user_messages", [])
            s.setdefault("objective", "")
            # A state written before turns were accounted by number: its turns are all counted.
            s.setdefault("accounted_turn", s["turn"])
            s["pid"] = os.getpid()
            s["daemon"] = "running"
            s["sessions"] = s.get("sessions", 0) + 1
            s["team_error"] = None  # the team just loaded cleanly
            if (s.get("config_refused") or {}).get("stamp") == self.user_stamp:
                # A restart is the user's doing: the files as they are now apply.
                warn.append("starting with a change to .autodev/ that was refused during a turn")
            s.pop("config_refused", None)
            if s.get("state") in ("stopped", "faulted", None):
                # Pick up where the run was: a question or a gate it left open is still open.
                back = s.get("paused_from") or {}
                if back.get("state") in ("awaiting_user", "gated"):
                    s["state"], s["reason"] = back["state"], back.get("reason")
                else:
                    s["state"], s["reason"] = "running", None
                s["paused_from"] = None
            return s

        st = self.state.update(init)
        self.session = st["sessions"]
        self._make_hooks()
        self._save_team()
        self.events.emit("daemon_started", pid=os.getpid(), sandbox=self.sandbox.describe())
        for w in [self.sandbox.warning, *dict.fromkeys(warn)]:
            if w:
                self.events.emit("warning", message=w)
        self._index(runs.start_record)
        self._recover()

    def _key_names(self) -> list[str]:
        """Variables named by api_key_env: kept out of commands and redacted from every log."""
        return self.team.key_names()

    def _start_scripted(self) -> None:
        from autodev.scripted import ScriptedServer, load_script

        script = load_script(self.team.script_path(self.paths.team_file))
        self.scripted_price = script.price
        self.server = ScriptedServer(
            script, self.paths.scripted_ledger, self.paths.run_dir / "scripted-requests.jsonl"
        )
        self.server.start()

    def _start_mcp(self) -> None:
        from autodev.harness.mcp import McpHub

        self.mcp = McpHub(
            self.team.mcp,
            repo=self.paths.repo,
            errlog=self.paths.run_dir / "mcp-servers.log",
            groups_file=self.paths.run_dir / "mcp-groups.json",
        )
        self.mcp.start()
        self._mcp_events()

    def _mcp_events(self) -> None:
        for type_, fields in self.mcp.drain() if self.mcp else []:
            self.events.emit(type_, **fields)

    def _tools(self):
        """Every tool a participant of this run can be given (a registry)."""
        from autodev.harness.catalog import participant_tools

        if self.mcp is None:
            return participant_tools()
        return participant_tools(self.mcp.tools(), self.mcp.capabilities())

    def _browser(self, p):
        """`p`'s browser when it is granted one and this machine can run it (else its tools are
        absent; `start` said so)."""
        from autodev.harness import browser

        if "browser" not in p.tools or browser.missing():
            return None
        if p.name not in self.browsers:
            self.browsers[p.name] = browser.Browser(self.paths.run_dir / "screenshots", name=p.name)
        return self.browsers[p.name]

    def close(self) -> None:
        if self.server:
            self.server.stop()
        if self.mcp:
            self.mcp.stop()
            if hasattr(self, "events"):
                self._mcp_events()
        for b in self.browsers.values():
            b.close()
        if getattr(self, "notifier", None):
            self.notifier.drain()  # `complete` is still delivered as the daemon exits
        for name in ("thread", "events", "hlog"):
            if hasattr(self, name):
                getattr(self, name).close()
        if hasattr(self, "lock"):
            self.lock.release()

    def _last_turn_records(self) -> tuple[list[dict], bool]:
        """The newest turn's harness records, oldest first, and whether it finished (read
        backwards, bounded by the size of that one turn)."""
        from autodev.journal import iter_records_reverse

        recs: list[dict] = []
        for rec in iter_records_reverse(self.paths.harness_log):
            recs.append(rec)
            if rec.get("type") == "turn_started":
                recs.reverse()
                return recs, recs[-1].get("type") == "turn_finished"
        return [], False

    def _recover(self) -> None:
        """Settle the newest turn of the harness log. A turn a crash (or a usage limit) left
        open resumes at the next turn boundary from its last safe point, unless its post reached
        the thread: then it is closed. A closed turn whose figures and effects never reached
        state.json (a crash right after it) gets them now, exactly once: they are written in one
        update with `applied_seq` / `accounted_turn`. A committed post is never made twice: its
        id is provisioned from the turn number."""
        from autodev.harness.recovery import rebuild

        self.resume = None
        recs, finished = self._last_turn_records()
        if not recs:
            return
        turn, who = recs[0]["turn"], recs[0]["participant"]
        post = self.thread.seen(f"{self.run_id}:t{turn}:post")
        if not finished and not post:
            self.resume = rebuild(recs)
            for call, began in self.resume.pending:
                if began is not None:  # it was running when the daemon died: say so
                    self.events.emit(
                        "tool_crashed",
                        turn=turn,
                        participant=who,
                        name=began.get("name"),
                        call_id=call["id"],
                        crashes=began.get("crashes", 1),
                        replay_safe=bool(began.get("replay_safe")),
                    )
            self.events.emit(
                "turn_recovered", turn=turn, participant=who, step=self.resume.steps, posted=None
            )
            self.state.update(lambda s: {**s, "recovered_turn": turn})
            return
        if not finished:
            self.hlog.append(
                {
                    "type": "turn_finished",
                    "run": self.run_id,
                    "turn": turn,
                    "seq": post["seq"],
                    "reason": "recovered: its post was committed",
                }
            )
            self.events.emit("turn_recovered", turn=turn, participant=who, posted=post["seq"])
        st = self.state.read()
        if post and post["seq"] > st.get("applied_seq", 0):
            self.events.emit("effects_recovered", seq=post["seq"])
            self._after_post(post, who, turn, rebuild(recs))
        elif not post and st.get("accounted_turn", turn) < turn and who in self.team.names():
            self.events.emit("effects_recovered", turn=turn)
            self._silent(who, recs[-1].get("reason") or "", turn, rebuild(recs))
        else:
            return
        self._plan_next()

    # -- the loop ----------------------------------------------------------------------------

    def run(self) -> int:
        try:
            self.open()
        except LogWriteError as e:
            if hasattr(self, "state"):
                self._fault(e)
                self._mark_stopped()
            self.close()
            print(f"autodev daemon: {e}", file=sys.stderr)
            return EXIT_FAILED
        except AutodevError:
            self.close()
            raise
        try:
            return self._loop()
        except LogWriteError as e:
            self._fault(e)
            print(f"autodev daemon: {e}", file=sys.stderr)
            return EXIT_FAILED
        finally:
            self._mark_stopped()
            if hasattr(self, "session"):
                self._index(runs.end_record)
            self.close()

    def _index(self, make) -> None:
        """One line in $AUTODEV_HOME/index.jsonl; the run goes on without it if it fails."""
        try:
            runs.append(
                make(self.run_id, self.session, self.paths.repo, self.paths.run_dir, self.state.read())
            )
        except (OSError, AutodevError) as e:
            msg = f"could not append to the runs index: {e}"
            print(f"autodev daemon: {msg}", file=sys.stderr)
            try:
                self.events.emit("warning", message=msg)
            except (OSError, AutodevError):
                pass

    def _mark_stopped(self) -> None:
        try:
            self.state.update(lambda s: {**s, "daemon": "stopped", "pid": None})
        except OSError as e:
            print(f"autodev daemon: could not record that it stopped: {e}", file=sys.stderr)

    def _fault(self, e: Exception) -> None:
        # Nothing else is appended: the logs are the thing that failed.
        why = reason("fault", error=str(e))
        self.state.update(lambda s: {**s, "state": "faulted", "reason": why})
        if getattr(self, "notifier", None):
            self.notifier.fire(notify.payload("faulted", why, str(self.paths.repo), self.run_id))

    def _make_hooks(self) -> None:
        """Hooks and notifications from the current config (rebuilt when it is edited)."""
        env = {k: v for k, v in os.environ.items() if k not in self.secret_env}
        base = {"repo": str(self.paths.repo), "run": self.run_id}
        self.hooks = Hooks(self.config.hooks, self.paths.repo, env, self.events.emit, base)
        self.notifier = notify.Notifier(
            self.config.notify_command,
            self.config.notify_url,
            self.config.notify_timeout_sec,
            self.paths.repo,
            env,
            self.events.emit,
        )

    def _state_event(self, state: str, why: dict | None) -> None:
        """Every state change: its event, the on_state hooks, and a notification when the run
        now needs the human (or is done)."""
        self.events.emit("state", state=state, reason=why)
        data = notify.payload(state, why, str(self.paths.repo), self.run_id)
        self.hooks.on_state(data)
        if state in notify.NOTIFY_STATES:
            self.notifier.fire(data)

    def _set(self, state: str, why: dict | None = None, **extra) -> None:
        cur = self.state.read()
        if cur["state"] == state and cur.get("reason") == why and not extra:
            return
        self.state.update(lambda s: {**s, "state": state, "reason": why, **extra})
        self._state_event(state, why)

    def _loop(self) -> int:
        while True:
            self._reload_team()
            if self._apply_controls():
                return EXIT_COMPLETE
            self._apply_inbox()
            st = self.state.read()
            state = st["state"]
            if state == "running" and self.thread.last_seq == 0:
                self._set("awaiting_user", reason("no_objective"))
                continue
            if state == "complete":
                # The daemon's work is done; a later `send` waits in the inbox for `start`.
                return EXIT_COMPLETE
            if state in IDLE:
                if self.until_idle:
                    return EXIT_NEEDS_USER
                self._idle(None)
                continue
            if state == "waiting":
                due = (st.get("wait") or {}).get("due", 0)
                if time.time() < due:
                    self._idle(due - time.time())
                    continue
                self._set("running", None, wait=None)
                continue
            if state == "faulted":
                return EXIT_FAILED
            if st.get("audit_pending"):
                self._pending_audit(st)
                continue
            self._one_turn(st)

    def _idle(self, timeout: float | None) -> None:
        """Sleep until the inbox or state.json changes (or `timeout` passes): no busy loop.

        The watch is re-armed every IDLE_RECHECK_S and the queue re-checked, because a change
        made after the check but before the watcher is registered would otherwise be missed
        (a lost wake-up: a `resume` that sits unread for an hour)."""
        from watchfiles import watch

        def relevant(_change, path: str) -> bool:
            return path.endswith(".json") and ("/inbox/" in path or path.endswith("/state.json"))

        end = time.monotonic() + (timeout if timeout is not None else 3600)
        while not self._inbox_or_controls_pending():
            left = end - time.monotonic()
            if left <= 0:
                return
            changed = next(
                watch(
                    self.paths.run_dir,
                    watch_filter=relevant,
                    rust_timeout=int(max(0.01, min(left, IDLE_RECHECK_S)) * 1000),
                    yield_on_timeout=True,
                    debounce=50,
                    step=20,
                    recursive=True,
                )
            )
            if changed:
                return

    def _save_team(self) -> None:
        """Keep the team just loaded in the run folder: `git clean -fdx` cannot take it, and
        `autodev init --from-run` brings it back."""
        from autodev.project import save_team

        try:
            save_team(self.paths.config_dir, self.paths.run_dir)
        except OSError as e:
            self.events.emit("warning", message=f"could not keep a copy of the team in the run folder: {e}")

    def _stop_requested(self) -> bool:
        """A `stop` the user asked for and the daemon has not applied yet."""
        try:
            st = self.state.read()
        except AutodevError:
            return False
        done = st.get("controls_applied", 0)
        return any(c.get("action") == "stop" and c.get("n", 0) > done for c in st.get("controls", []))

    def _inbox_or_controls_pending(self) -> bool:
        st = self.state.read()
        return bool(inbox.pending(self.paths.inbox)) or any(
            c["n"] > st.get("controls_applied", 0) for c in st.get("controls", [])
        )

    # -- input -------------------------------------------------------------------------------

    def _reload_team(self) -> None:
        """Apply an edit of .autodev/ made between turns. An edit made during a turn was
        refused at that turn's end (`_refuse_turn_edits`) and stays refused until it changes."""
        cur = userfiles.stamp(self.paths.config_dir)
        if cur == self.user_stamp:
            return
        if cur == (self.state.read().get("config_refused") or {}).get("stamp"):
            return
        self.user_stamp = cur
        try:
            team = cfgmod.load_team(self.paths.team_file)
            cfg = cfgmod.load_config(self.paths.config_file)
            box = sandboxmod.resolve(cfg.sandbox)
        except ConfigError as e:
            problem = str(e)
            self.events.emit("warning", message=f"team edit rejected, keeping the old team: {problem}")
            self.state.update(lambda s: {**s, "team_error": problem, "config_refused": None})
            return
        self.team, self.config, self.sandbox = team, cfg, box
        userfiles.snapshot_prompts(self.paths.prompt_overrides, self.overrides)
        self.secret_env = self._key_names()
        self.redact.learn(v for k in self.secret_env if (v := keys.get(k)))
        self._make_hooks()
        self.state.update(lambda s: {**s, "team_error": None, "config_refused": None})
        self.events.emit("team_reloaded", participants=team.names())
        self._save_team()

    def _refuse_turn_edits(self, name: str, turn: int, before: str) -> None:
        """A change to .autodev/ while `name`'s turn ran: not honoured, since only the user may
        edit the team, config and prompts, and during a turn we cannot tell who did."""
        after = userfiles.stamp(self.paths.config_dir)
        if after == before:
            return
        text = (
            f".autodev/ changed during turn {turn} ({name} was speaking); the change is not "
            "applied and the previous team, config and prompts stay in use. If you made it: "
            "`autodev pause`, save the file again, then `autodev resume`"
        )
        self.state.update(
            lambda s: {
                **s,
                "config_refused": {"turn": turn, "participant": name, "stamp": after, "text": text},
            }
        )
        self.events.emit("config_refused", participant=name, turn=turn, message=text)

    def _apply_controls(self) -> bool:
        """Pause, resume and stop requests, in the order they were made. True = stop now."""
        st = self.state.read()
        done = st.get("controls_applied", 0)
        todo = [c for c in st.get("controls", []) if c["n"] > done]
        stop = False
        for c in todo:
            if c["action"] == "stop":
                stop = True
            elif c["action"] == "pause":
                cur = self.state.read()
                if cur["state"] not in ("complete", "paused"):
                    # Remember what the pause interrupted: a question or a gate is still open.
                    self._set(
                        "paused",
                        reason("user"),
                        paused_from={"state": cur["state"], "reason": cur.get("reason")},
                    )
            elif c["action"] == "resume":
                cur = self.state.read()
                if cur["state"] == "paused":
                    back = cur.get("paused_from") or {}
                    if back.get("state") in ("awaiting_user", "gated"):
                        self._set(back["state"], back.get("reason"), paused_from=None)
                    else:
                        self._set("running", None, paused_from=None)
                elif cur["state"] == "waiting":
                    self._set("running", None, wait=None)
            self.events.emit("control", action=c["action"])
        if todo:
            last = todo[-1]["n"]
            self.state.update(
                lambda s: {
                    **s,
                    "controls_applied": last,
                    "controls": [c for c in s["controls"] if c["n"] > last],
                }
            )
        if stop:
            cur = self.state.read()
            back = (
                cur.get("paused_from")
                if cur["state"] == "paused"
                else {"state": cur["state"], "reason": cur.get("reason")}
            )
            self._set(
                "stopped",
                {"code": "stopped", "text": "you stopped the run", "continue": "autodev start"},
                paused_from=back,
            )
        return stop

    def _set_aside(self, path: Path, why: str) -> None:
        self.events.emit("warning", message=f"inbox file {path.name} set aside: {why}")

    def _apply_inbox(self) -> None:
        for path, msg in inbox.pending(self.paths.inbox, self._set_aside):
            if msg.get("kind") == "send":
                self._user_message(msg)
            elif msg.get("kind") in ("approve", "deny"):
                self._gate_answer(msg)
            elif msg.get("kind") == "answer":
                self._notice_answer(msg)
            elif msg.get("kind") == "notice":
                self._notice_hold(msg)
            else:
                self.events.emit(
                    "warning",
                    message=f"inbox message of kind {msg.get('kind')!r} "
                    "is not handled by this version; kept aside",
                )
                path.rename(path.with_suffix(".unhandled"))
                continue
            inbox.done(path)

    def _user_message(self, msg: dict) -> None:
        text = str(msg.get("text", ""))
        self._note("user", text, id=msg["id"])

        def fresh(s: dict) -> dict:
            s["talk_turns"], s["audits"] = 0, 0
            s["user_messages"] = [*s.get("user_messages", []), text[:4000]][-USER_KEEP:]
            if not s.get("objective"):
                s["objective"] = text
            if s["state"] in ("awaiting_user", "paused", "complete", "waiting", "gated"):
                # A gate stays open (still approvable); its declarer gets the message (rule 1).
                s["state"], s["reason"], s["wait"] = "running", None, None
            s["question"], s["last_wait"] = None, None
            for n in s.get("notices", {}).values():
                if n.get("hold") and not n.get("pinned"):
                    n["hold"], n["released"] = None, "a user message"
            return s

        self.state.update(fresh)

    # -- a turn ------------------------------------------------------------------------------

    def _one_turn(self, st: dict) -> None:
        from autodev.harness.turn import AllModelsLimited, TurnStopped

        resume, self.resume = self.resume, None
        if resume and resume.participant not in self.team.names():
            self.hlog.append(
                {
                    "type": "turn_finished",
                    "run": self.run_id,
                    "turn": resume.turn,
                    "seq": None,
                    "reason": "its participant left the team",
                }
            )
            resume = None
        if resume:
            p, turn_no, decision = self.team.get(resume.participant), resume.turn, None
            if self._budget_reached(p.name):
                self.resume = resume  # the open turn continues once the cap is raised
                return
            self.state.update(lambda s: {**s, "speaking": p.name, "next": None})
        else:
            decision = scheduler.next_speaker(
                self.team.names(), self.thread.tail(TAIL), self.thread.last_spoke
            )
            p = self.team.get(decision.speaker)
            if self._budget_reached(p.name):
                return
            for w in decision.warnings:
                self.events.emit("warning", message=w)
            turn_no = st["turn"] + 1
            self.state.update(
                lambda s: {
                    **s,
                    "turn": turn_no,
                    "speaking": p.name,
                    "next": None,
                    "warnings": list(decision.warnings),
                }
            )
            self.events.emit(
                "scheduled", participant=p.name, rule=decision.rule, why=decision.why, turn=turn_no
            )
        before = userfiles.stamp(self.paths.config_dir)
        try:
            result = self._run_turn(p, turn_no, st, decision, resume)
        except ProviderError as e:
            # The turn stays open: `resume` continues it from the same step, with fresh retries.
            self.hlog.append(
                {"type": "generation_failed", "run": self.run_id, "turn": turn_no, "error": str(e)[:500]}
            )
            self.events.emit("error", participant=p.name, message=str(e), detail=getattr(e, "detail", None))
            self._recover()
            self._set("paused", reasons.provider(e), speaking=None)
            return
        except TurnStopped:
            # Left open at a step boundary: the stop applies now; `start` continues the turn.
            self.events.emit("turn_stopped", participant=p.name, turn=turn_no)
            self._recover()
            return
        except AllModelsLimited as e:
            self._recover()
            self._set(
                "waiting",
                {
                    "code": "usage_limit",
                    "text": e.detail,
                    "continue": "the run continues by itself after the reset",
                },
                wait={"author": p.name, "due": e.reset_at, "usage_limit": True},
                speaking=None,
            )
            return
        self._refuse_turn_edits(p.name, turn_no, before)
        if result.post:
            self._after_post(result.post, p.name, turn_no, result)
        else:
            self._silent(p.name, result.reason, turn_no, result)
        self._plan_next()

    def _budget_reached(self, speaker: str) -> bool:
        """At a turn boundary: pause (reason `budget`) when a cap of the run or of the next
        speaker is reached. Spend is never reset; a raised cap lets the next check pass."""
        why = budget.reached(self.config, self.team, self.state.read(), speaker)
        if why is None:
            return False
        self.events.emit("budget_reached", participant=speaker, text=why["text"])
        self._set("paused", why, speaking=None, paused_from=None)
        return True

    def _run_turn(self, p, turn_no: int, st: dict, decision, resume=None):
        from autodev.harness.tools import Workspace
        from autodev.harness.turn import TurnContext, run_turn

        cursor = st.get("cursors", {}).get(p.name, 0)
        restricted = st.get("talk_turns", 0) >= self.config.max_talk_turns
        notes = [f"you were chosen by the scheduler: {decision.why}"] if decision else []
        if restricted:
            notes.append(
                "talk limit reached: only work_done, a say to the user, or (if you cannot "
                "write) a handoff to a participant who can write are accepted now"
            )
        answers, delivered = self._notice_notes(p.name, st)
        notes.extend(answers)
        self._mcp_events()
        withheld = self._withheld(p.name, st)
        extra = [t for t in self._tools() if t.capability in p.tools]
        browser = self._browser(p)
        if browser is None:
            extra = [t for t in extra if t.capability != "browser"]
        if withheld:
            notes.append(
                "a notice holds some of your tools until the user releases them: "
                + ", ".join(sorted(withheld))
            )
        workspace = Workspace(
            self.paths.repo,
            write=p.write,
            command_timeout=self.config.command_timeout_sec,
            secret_env=self.secret_env,
            command_guard=self._command_guard(p.name),
            room=self._room(p),
            redactor=self.redact,
        )
        # Every tool that runs a process is cut at the turn's deadline, or when `stop` arrives.
        workspace.limit(time.monotonic() + self.config.turn_timeout_min * 60, self._stop_requested)
        ctx = TurnContext(
            run_id=self.run_id,
            turn=turn_no,
            name=p.name,
            can_write=p.write,
            team_writers={q.name: q.write for q in self.team.participants},
            repo=self.paths.repo,
            thread=self.thread,
            events=self.events,
            hlog=self.hlog,
            workspace=workspace,
            targets=self._targets(p),
            system_prompt="" if resume else self._system_prompt(p, workspace, withheld, extra),
            turn_prompt=""
            if resume
            else build_turn_prompt(
                name=p.name,
                turn=turn_no,
                last_seq=self.thread.last_seq,
                cursor=cursor,
                objective=st.get("objective", ""),
                tail=self.thread.tail(TAIL),
                notes=notes,
                overrides=self.overrides,
            ),
            restricted=restricted,
            max_steps=self.config.max_steps_per_turn,
            timeout_sec=self.config.turn_timeout_min * 60,
            max_retries=self.config.max_retries,
            retry_backoff_sec=self.config.retry_backoff_sec,
            limited_until=dict(st.get("limited_until", {})),
            overrides=self.overrides,
            withheld=withheld,
            extra_tools=extra,
            browser=browser,
            tool_guard=self._tool_guard(p.name),
            tell_user=self._raise_notice(p.name),
            hooks=self.hooks if self.hooks.hooks else None,
        )
        seen_upto = self.thread.last_seq
        try:
            result = self._agent_turn(p, ctx, resume) if p.agent else run_turn(ctx, resume)
        finally:
            self.state.update(lambda s: {**s, "limited_until": ctx.limited_until})
        if delivered and not resume:

            def mark(s: dict) -> dict:
                for nid in delivered:
                    s["notices"][nid]["delivered"] = True
                return s

            self.state.update(mark)
        upto = result.post["seq"] if result.post else seen_upto
        self.state.update(
            lambda s: {
                **s,
                "cursors": {**s.get("cursors", {}), p.name: upto},
                "speaking": None,
                "recovered_turn": None,
            }
        )
        if result.post:
            self._echo(result.post)
        return result

    def _room(self, p=None) -> sandboxmod.Room:
        """Where `p`'s commands run (None: the audit's check)."""
        net = self.config.command_network if p is None or p.network is None else p.network
        return self.sandbox.room(
            self.paths.repo,
            hide=[Path.home(), autodev_home(), self.paths.run_dir],
            network=net,
            expose=self.config.sandbox_expose,
        )

    def _agent_turn(self, p, ctx, resume):
        """`p`'s turn taken by its coding-agent CLI (SPEC §16)."""
        from autodev.agents.turn import AgentSpec, run_agent_turn

        recs = self._last_turn_records()[0] if resume else []
        spec = AgentSpec(
            p.agents(),
            self.paths.run_dir,
            model=p.model,
            effort=p.effort,
            extra_args=list(p.agent_args),
            gated=p.agent_permission == "gated" or self.config.agents_gated,
            key_env=p.api_key_env,
            stopping=self._stop_requested,
            stale=[r for r in recs if r.get("type") == "agent_started"],
            redact=self.redact.text,
        )
        return run_agent_turn(ctx, spec, resume)

    def _targets(self, p) -> list[providers.Target]:
        models = p.models()
        if not models:  # an agent CLI without model failovers
            return []
        return providers.targets_for(
            p.name,
            models[0],
            models[1:],
            effort=p.effort,
            api_base=p.api_base,
            api_key_env=p.api_key_env,
            scripted_url=self.server.base_url if self.server else None,
            scripted_price=self.scripted_price,
            context=p.context,
            max_output_tokens=p.max_output_tokens,
            configured_output=self.config.max_output_tokens,
        )

    def _system_prompt(self, p, workspace, withheld=frozenset(), extra=()) -> str:
        roster = "\n".join(
            f"- {q.name}{' (you)' if q.name == p.name else ''}: "
            f"{'writes' if q.write else 'reads only'}; {q.lane}"
            for q in self.team.participants
        )
        return prompts.render(
            "system.md",
            {
                "name": p.name,
                "lane": p.lane or "(no lane given)",
                "write_rule": (
                    "You may change the repository."
                    if p.write
                    else "You may NOT change the repository (you cannot post work_done); you can "
                    "read, search and run commands such as tests."
                ),
                "roster": roster,
                "tool_names": ", ".join(
                    [
                        "post",
                        "read_thread",
                        "tell_user",
                        *sorted((workspace.names() | {t.name for t in extra}) - withheld),
                    ]
                ),
            },
            self.overrides,
        )

    def _command_guard(self, name: str):
        """Refuse gateRequired commands unless an approved gate of `name` covers them; each
        approval covers one use."""
        from autodev import gates

        def guard(command: str) -> str | None:
            st = self.state.read()
            approved = [g for g in st.get("approved_gates", []) if g["declarer"] == name]
            refusal, used = gates.guard(
                command,
                self.config.gate_required,
                approved,
                opaque=self.config.gate_opaque,
                written=gates.written_since(self.paths.repo, st.get("started_at")),
            )
            if refusal:
                self.events.emit("command_refused", participant=name, command=command[:300])
                return refusal
            self._use_gates(name, used)
            return None

        return guard

    def _use_gates(self, name: str, used: list[str]) -> None:
        """Each approval covers one use: the gates a command or tool call used are spent."""
        if not used:
            return
        self.state.update(
            lambda s: {**s, "approved_gates": [g for g in s.get("approved_gates", []) if g["id"] not in used]}
        )
        self.events.emit("gate_used", participant=name, ids=used)

    def _tool_guard(self, name: str):
        """Refuse a gateRequiredTools tool unless an approved gate of `name` names it; each
        approval covers one call."""
        from autodev import gates

        def guard(tool: str) -> str | None:
            if not self.config.gate_required_tools:
                return None
            approved = [g for g in self.state.read().get("approved_gates", []) if g["declarer"] == name]
            refusal, used = gates.tool_guard(tool, self.config.gate_required_tools, approved)
            if refusal:
                self.events.emit("tool_refused", participant=name, name=tool)
                return refusal
            self._use_gates(name, used)
            return None

        return guard


def main(argv: list[str] | None = None) -> int:
    """Entry of the detached daemon: python -m autodev.daemon REPO [STAGED_OBJECTIVE]"""
    argv = sys.argv[1:] if argv is None else argv
    repo = Path(argv[0])
    keys.receive()  # `start` hands the keys over a pipe; they are never in our environment
    try:
        return Daemon(repo, staged=Path(argv[1]) if len(argv) > 1 else None).run()
    except AutodevError as e:
        print(f"autodev daemon: {e}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
