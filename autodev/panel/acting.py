"""The panel's actions on the run: approve, deny, answer, hold, release, send, pause, resume,
stop and rewind, by the same inbox and state paths as the CLI commands (`autodev.user.actions`).
`PanelApp` binds the keys to them and says what Needs you lists."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import App
from textual.widgets import OptionList

from autodev.guard.display import digest
from autodev.panel.dialogs import Confirm, Prompt
from autodev.store.paths import RunPaths
from autodev.user import actions
from autodev.user.status import Need


class Acting(App[None]):
    paths: RunPaths
    daemon_pid: int | None

    def needs(self) -> list[Need]:
        """What Needs you lists, in order (the panel reads it from the status)."""
        raise NotImplementedError

    def reload(self) -> None:
        """Read what changed in the run folder (the panel follows it)."""
        raise NotImplementedError

    def _target(self, kind: str, want: Callable[[Need], bool] = lambda n: True) -> Need | None:
        """The highlighted Needs-you item if it is of `kind`, else the first one that is."""
        items = self.needs()
        hi = self.query_one("#needs", OptionList).highlighted
        if hi is not None and hi < len(items) and items[hi].type == kind and want(items[hi]):
            return items[hi]
        return next((n for n in items if n.type == kind and want(n)), None)

    def action_approve(self) -> None:
        gate = self._target("gate")
        if not gate:
            self.notify("no open gate to approve", severity="warning")
            return
        result = actions.approve(self.paths, gate.id, digest=digest(gate.text))
        self.notify(f"approval of gate {gate.id} sent" + _replaced(result, "approval"))

    def action_deny(self) -> None:
        gate = self._target("gate")
        if not gate:
            self.notify("no open gate to deny", severity="warning")
            return

        def done(reason: str | None) -> None:
            if reason is not None:
                result = actions.deny(self.paths, gate.id, reason.strip())
                self.notify(f"denial of gate {gate.id} sent" + _replaced(result, "denial"))

        self.push_screen(
            Prompt(
                f"Deny gate {gate.id} from {gate.from_}: why? (may be empty)",
                "the reason, for the declarer",
                allow_empty=True,
            ),
            done,
        )

    def action_answer(self) -> None:
        n = self._target("notice", lambda n: not n.answered) or self._target("notice")
        if not n:
            self.notify("no notice to answer", severity="warning")
            return

        def done(text: str | None) -> None:
            if text:
                result = actions.answer(self.paths, str(n.id), text)
                self.notify(f"answer to notice {n.id} sent" + _replaced(result, "answer"))

        self.push_screen(Prompt(f"Answer notice {n.id} from {n.from_}: {n.text[:120]}", "your answer"), done)

    def action_hold(self) -> None:
        n = self._target("notice", lambda n: bool(n.hold) and not n.pinned)
        if not n:
            self.notify("no unpinned hold to pin", severity="warning")
            return
        actions.notice(self.paths, str(n.id), "hold")
        self.notify(f"hold of notice {n.id} pinned")

    def action_release(self) -> None:
        n = self._target("notice", lambda n: bool(n.hold))
        if not n:
            self.notify("no hold to release", severity="warning")
            return
        actions.notice(self.paths, str(n.id), "release")
        self.notify(f"release of notice {n.id} sent")

    def action_send(self) -> None:
        def done(text: str | None) -> None:
            if text:
                msg = actions.send(self.paths, text)
                self.notify(f"sent ({msg.id})" + _replaced(msg, "message"))

        self.push_screen(Prompt("Message to the team", "your message"), done)

    def _control(self, action: str) -> None:
        result = actions.control(self.paths, action)
        note = "" if self.daemon_pid else " (no daemon is running: it applies at the next start)"
        self.notify(f"{action} requested{note}" + _replaced(result, action))

    def action_pause(self) -> None:
        self._control("pause")

    def action_resume(self) -> None:
        self._control("resume")

    def action_stop(self) -> None:
        def done(yes: bool | None) -> None:
            if yes:
                self._control("stop")

        self.push_screen(Confirm("Stop the run after the turn in flight?"), done)

    def action_rewind(self) -> None:
        """Rewind to a chosen post (its #seq), after a confirmation: the same path as the CLI."""

        def chosen(text: str | None) -> None:
            if not text:
                return
            if not text.strip().lstrip("#").isdigit():
                self.notify(f"{text!r} is not a post's #seq", severity="error")
                return
            seq = int(text.strip().lstrip("#"))

            def confirmed(yes: bool | None) -> None:
                if yes:
                    self.run_worker(lambda: self._rewind(seq), thread=True)

            self.push_screen(
                Confirm(
                    f"Rewind to post #{seq}? Later posts are superseded and the branch goes back to "
                    "its commit (later work is kept on refs/autodev/rewound/N)."
                ),
                confirmed,
            )

        self.push_screen(Prompt("Rewind to which post? (#seq)", "e.g. 12"), chosen)

    def _rewind(self, seq: int) -> None:
        from autodev.errors import AutodevError
        from autodev.timeline import rewind

        try:
            done = rewind.request(self.paths, seq)
        except AutodevError as e:
            self.call_from_thread(self.notify, str(e), severity="error")
            return
        self.call_from_thread(self.notify, f"rewound to post {done['to_seq']}")
        self.call_from_thread(self.reload)


def _replaced(result: actions.Queued, by: str) -> str:
    """The panel's note on a queued stop or pause an action replaced (actions.py)."""
    from autodev.store.queued import replaced_text

    return f"; {replaced_text(result.cancelled, by)}" if result.cancelled else ""
