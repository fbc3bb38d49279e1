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
from autodev.store.thread import now_ts


def teller(run: Run, name: str, holdable: Callable[[], list[str]]) -> Callable[[str, str | None], str]:
    """The `tell_user` of `name`'s turn: raises a notice and returns its id."""

    def tell(text: str, hold: str | None) -> str:
        can = holdable()
        if hold is not None and hold not in can:
            raise ToolError(f"unknown capability {hold!r}; holdable: {', '.join(can)}")
        st = run.state.update(lambda s: {**s, "notice_seq": s.get("notice_seq", 0) + 1})
        nid = str(st["notice_seq"])
        notice = {
            "id": nid,
            "from": name,
            "text": text[:4000],
            "hold": hold,
            "pinned": False,
            "answer": None,
            "delivered": False,
            "ts": now_ts(),
        }
        held = f" (holding {hold})" if hold else ""
        run.note(
            "system",
            f"{name} told the user{held}: {text[:300]}",
            id=f"{run.run_id}:notice:{nid}",
            notice={"id": nid, "from": name, "hold": hold},
        )
        run.state.update(lambda s: {**s, "notices": {**s.get("notices", {}), nid: notice}})
        run.events.emit(NoticeEvent(id=nid, participant=name, text=text[:500], hold=hold))
        return nid

    return tell


def answer(run: Run, msg: dict) -> None:
    """`autodev answer`: the answer noted on the thread and kept for the asker's next turn."""
    nid = str(msg.get("notice_id"))
    st = run.state.read()
    if nid not in st.get("notices", {}):
        run.events.emit(WarningEvent(message=f"answer to unknown notice {nid} ignored"))
        return
    text = str(msg.get("text", ""))
    n = st["notices"][nid]
    run.note(
        "system",
        f"the user answered notice {nid} from {n['from']}: {text[:300]}",
        id=msg["id"],
        notice={"id": nid, "from": n["from"], "answered": True},
    )

    def answered(s: dict) -> dict:
        m = s["notices"][nid]
        m.update(answer=text[:4000], delivered=False)
        if m.get("hold") and not m.get("pinned"):
            m["hold"], m["released"] = None, "answered"
        return s

    run.state.update(answered)
    run.events.emit(NoticeAnsweredEvent(id=nid, participant=n["from"]))


def hold(run: Run, msg: dict) -> None:
    """`autodev notice N hold|release`: pin a notice's hold, or release it."""
    nid, action = str(msg.get("notice_id")), msg.get("action")
    if nid not in run.state.read().get("notices", {}):
        run.events.emit(WarningEvent(message=f"notice {nid} does not exist; {action} ignored"))
        return

    def change(s: dict) -> dict:
        n = s["notices"][nid]
        if action == "hold":
            n["pinned"] = True
        else:
            n["pinned"], n["hold"], n["released"] = False, None, "the user"
        return s

    run.state.update(change)
    run.events.emit(NoticePinnedEvent(id=nid) if action == "hold" else NoticeReleasedEvent(id=nid))


def answers_for(name: str, st: dict) -> tuple[list[str], list[str]]:
    """Answers to `name`'s notices not yet delivered: 300 + 300 characters each, and their ids
    (pure)."""
    notes, ids = [], []
    for nid, n in sorted(st.get("notices", {}).items(), key=lambda kv: int(kv[0])):
        if n["from"] == name and n.get("answer") is not None and not n.get("delivered"):
            notes.append(f'the user answered your notice {nid} ("{n["text"][:300]}"): {n["answer"][:300]}')
            ids.append(nid)
    return notes, ids


def holds_of(name: str, st: dict) -> list[str]:
    """The capabilities `name`'s notices hold (pure)."""
    return [n["hold"] for n in st.get("notices", {}).values() if n["from"] == name and n.get("hold")]
