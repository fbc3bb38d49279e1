"""Notices (tell_user), their answers, and the capabilities they hold.

A participant raises a notice with `tell_user`; a `system` note on the thread says what it told
the user. `autodev answer` delivers 300 characters of the notice plus 300 of the answer into the
participant's next turn prompt. A notice may hold a capability (a named group of tools) that the
participant gives up until the user releases it; a user message releases every unpinned hold
(`inputs.user_message`).
"""

from __future__ import annotations

from collections.abc import Callable

from autodev.daemon.handles import Run
from autodev.errors import ToolError
from autodev.records.events import (
    NoticeAnsweredEvent,
    NoticeEvent,
    NoticePinnedEvent,
    NoticeReleasedEvent,
    WarningEvent,
)
from autodev.records.messages import AnswerMessage, NoticeMessage
from autodev.records.state import Notice, RunState
from autodev.store.paths import git_head
from autodev.store.thread import now_ts


def teller(run: Run, name: str, holdable: Callable[[], list[str]]) -> Callable[[str, str | None], str]:
    """The `tell_user` of `name`'s turn: raises a notice and returns its id."""

    def tell(text: str, hold: str | None) -> str:
        can = holdable()
        if hold is not None and hold not in can:
            raise ToolError(f"unknown capability {hold!r}; holdable: {', '.join(can)}")
        st = run.state.update(lambda s: s.changed(notice_seq=s.notice_seq + 1))
        nid = str(st.notice_seq)
        notice = Notice.model_validate(
            {
                "id": nid,
                "from": name,
                "text": text[:4000],
                "hold": hold,
                "pinned": False,
                "answer": None,
                "delivered": False,
                "ts": now_ts(),
            }
        )
        held = f" (holding {hold})" if hold else ""
        run.note(
            "system",
            f"{name} told the user{held}: {text[:300]}",
            id=f"{run.run_id}:notice:{nid}",
            notice={"id": nid, "from": name, "hold": hold},
            # raised mid-turn, maybe after a commit: `autodev rewind` to this note goes back
            # to the commit HEAD was on then, not to the one the turn started on
            head=git_head(run.paths.repo),
        )
        run.state.update(lambda s: s.changed(notices={**s.notices, nid: notice}))
        run.events.emit(NoticeEvent(id=nid, participant=name, text=text[:500], hold=hold))
        return nid

    return tell


def answer(run: Run, msg: AnswerMessage) -> None:
    """`autodev answer`: the answer noted on the thread and kept for the asker's next turn."""
    nid = msg.notice_id
    n = run.state.read().notices.get(nid)
    if n is None:
        run.events.emit(WarningEvent(message=f"answer to unknown notice {nid} ignored"))
        return
    text = msg.text
    run.note(
        "system",
        f"the user answered notice {nid} from {n.from_}: {text[:300]}",
        id=msg.id,
        notice={"id": nid, "from": n.from_, "answered": True},
    )

    def answered(s: RunState) -> RunState:
        m = s.notices[nid].but(answer=text[:4000], delivered=False)
        if m.hold and not m.pinned:
            m = m.but(hold=None, released="answered")
        return s.changed(notices={**s.notices, nid: m})

    run.state.update(answered)
    run.events.emit(NoticeAnsweredEvent(id=nid, participant=n.from_))


def hold(run: Run, msg: NoticeMessage) -> None:
    """`autodev notice N hold|release`: pin a notice's hold, or release it."""
    nid, action = msg.notice_id, msg.action
    if nid not in run.state.read().notices:
        run.events.emit(WarningEvent(message=f"notice {nid} does not exist; {action} ignored"))
        return

    def change(s: RunState) -> RunState:
        n = s.notices[nid]
        if action == "hold":
            n = n.but(pinned=True)
        else:
            n = n.but(pinned=False, hold=None, released="the user")
        return s.changed(notices={**s.notices, nid: n})

    run.state.update(change)
    run.events.emit(NoticePinnedEvent(id=nid) if action == "hold" else NoticeReleasedEvent(id=nid))


def answers_for(name: str, st: RunState) -> tuple[list[str], list[str]]:
    """Answers to `name`'s notices not yet delivered: 300 + 300 characters each, and their ids
    (pure)."""
    notes: list[str] = []
    ids: list[str] = []
    for nid, n in sorted(st.notices.items(), key=lambda kv: int(kv[0])):
        if n.from_ == name and n.answer is not None and not n.delivered:
            notes.append(f'the user answered your notice {nid} ("{n.text[:300]}"): {n.answer[:300]}')
            ids.append(nid)
    return notes, ids


def holds_of(name: str, st: RunState) -> list[str]:
    """The capabilities `name`'s notices hold (pure)."""
    return [n.hold for n in st.notices.values() if n.from_ == name and n.hold]
