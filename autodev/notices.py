"""Notices (tell_user), their answers, and the capabilities they hold — the daemon's part.

A participant raises a notice with `tell_user`; a `system` note on the thread says what it told
the user. `autodev answer` delivers 300 characters of the notice plus 300 of the answer into the
participant's next turn prompt. A notice may hold a capability (a named group of tools) that the
participant gives up until the user releases it; a user message releases every unpinned hold.
"""

from __future__ import annotations

from autodev.thread import now_ts


class NoticesMixin:
    def _raise_notice(self, name: str):
        from autodev.errors import ToolError

        def tell(text: str, hold: str | None) -> str:
            holdable = self._tools().holdable()
            if hold is not None and hold not in holdable:
                raise ToolError(f"unknown capability {hold!r}; holdable: {', '.join(holdable)}")
            st = self.state.update(lambda s: {**s, "notice_seq": s.get("notice_seq", 0) + 1})
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
            self._note(
                "system",
                f"{name} told the user{held}: {text[:300]}",
                id=f"{self.run_id}:notice:{nid}",
                notice={"id": nid, "from": name, "hold": hold},
            )
            self.state.update(lambda s: {**s, "notices": {**s.get("notices", {}), nid: notice}})
            self.events.emit("notice", id=nid, participant=name, text=text[:500], hold=hold)
            return nid

        return tell

    def _notice_answer(self, msg: dict) -> None:
        nid = str(msg.get("notice_id"))
        st = self.state.read()
        if nid not in st.get("notices", {}):
            self.events.emit("warning", message=f"answer to unknown notice {nid} ignored")
            return
        text = str(msg.get("text", ""))
        n = st["notices"][nid]
        self._note(
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

        self.state.update(answered)
        self.events.emit("notice_answered", id=nid, participant=n["from"])

    def _notice_hold(self, msg: dict) -> None:
        nid, action = str(msg.get("notice_id")), msg.get("action")
        if nid not in self.state.read().get("notices", {}):
            self.events.emit("warning", message=f"notice {nid} does not exist; {action} ignored")
            return

        def change(s: dict) -> dict:
            n = s["notices"][nid]
            if action == "hold":
                n["pinned"] = True
            else:
                n["pinned"], n["hold"], n["released"] = False, None, "the user"
            return s

        self.state.update(change)
        self.events.emit("notice_" + ("pinned" if action == "hold" else "released"), id=nid)

    def _notice_notes(self, name: str, st: dict) -> tuple[list[str], list[str]]:
        """Answers to `name`'s notices not yet delivered: 300 + 300 characters each."""
        notes, ids = [], []
        for nid, n in sorted(st.get("notices", {}).items(), key=lambda kv: int(kv[0])):
            if n["from"] == name and n.get("answer") is not None and not n.get("delivered"):
                notes.append(
                    f'the user answered your notice {nid} ("{n["text"][:300]}"): {n["answer"][:300]}'
                )
                ids.append(nid)
        return notes, ids

    def _withheld(self, name: str, st: dict) -> frozenset[str]:
        held = [n["hold"] for n in st.get("notices", {}).values() if n["from"] == name and n.get("hold")]
        return self._tools().withheld(held)
