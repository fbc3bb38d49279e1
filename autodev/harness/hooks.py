"""Hooks: shell commands declared in config.toml (`[[hooks]]`) at the harness's control points.

Each runs `sh -c command` in the repository with a JSON payload on stdin, in its own process
group, killed whole after `timeout_sec`; provider keys are removed from its environment. It runs
in the sandbox (`room`: what a participant's command sees), since whatever it starts may load the
repository's code (`python3 -c` imports a planted `json.py`, `make` reads the Makefile); a hook
with `host = true` runs on the host, as its user chose. Every
run is an event (`hook`), and one that fails, times out or blocks is shown in the Feed.

Points and protocols:
- before_tool: exit 0 allows the call; a stdout of `{"args": {...}}` replaces the arguments.
  Exit non-zero blocks the call and its stdout is the reason the model reads. A crash or a
  timeout blocks too (fails closed). The outcome is written in the call's tool_started record,
  so a resumed turn reuses it instead of asking again.
- after_tool: its stdout (whatever its exit) is appended to the tool result the model reads.
- before_post: exit non-zero (or a crash or timeout) refuses the post; stdout is the reason.
- after_post, on_state: told only; their outcome is an event.
`match` is a glob on the tool name (tool points), the post's kind (post points) or the state.
"""

from __future__ import annotations

import fnmatch
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from autodev.host.procgroup import run_json
from autodev.records.events import HookEvent
from autodev.records.harness_log import HookOutcome
from autodev.store.journal import JsonObject, is_object

if TYPE_CHECKING:
    from autodev.config.run import HookConfig
    from autodev.guard.sandbox import Room
    from autodev.records.events import Event
    from autodev.records.post import Post

OUT_MAX = 4000


class HookDecision(TypedDict):
    """A before_tool hook's effective outcome, as tool_started records it."""

    blocked: str | None  # why the call is blocked; None: it runs
    args: JsonObject  # the arguments it runs with


def decision(hook: HookOutcome | None) -> HookDecision | None:
    """A decision read back from a tool_started record (None: none was recorded)."""
    if hook is None or not hook.model_fields_set:
        return None
    return {"blocked": hook.blocked or None, "args": {**hook.args}}


@dataclass(frozen=True)
class _Ran:
    """One hook's run: its exit code (None: timed out or could not run), its output, and what
    went wrong (None when it exited 0)."""

    exit: int | None
    out: str
    err: str
    problem: str | None


class Hooks:
    def __init__(
        self,
        hooks: Sequence[HookConfig],
        repo: Path,
        env: dict[str, str],
        emit: Callable[[Event], object],
        base: Mapping[str, object],
        room: Room | None = None,
    ):
        self.hooks, self.repo, self.env, self.emit, self.base = list(hooks), repo, env, emit, base
        self.room = room  # guard/sandbox.Room where hooks run; None: no sandbox is in use

    def matching(self, on: str, subject: str) -> list[HookConfig]:
        return [h for h in self.hooks if h.on == on and fnmatch.fnmatchcase(subject, h.match)]

    def _run(self, hook: HookConfig, subject: str, data: Mapping[str, object]) -> _Ran:
        """Run one hook with `data` (after the run's base fields) as its JSON payload."""
        began = time.monotonic()
        try:
            code, out, err = run_json(
                hook.command,
                {**self.base, **data},
                self.repo,
                hook.timeout_sec,
                self.env,
                None if hook.host else self.room,
            )
            problem = (
                f"timed out after {hook.timeout_sec:g}s"
                if code is None
                else (f"exited {code}" if code else None)
            )
        except OSError as e:
            code, out, err, problem = None, "", "", f"could not run: {e}"
        out = (out or "").strip()[:OUT_MAX]
        self.emit(
            HookEvent(
                on=hook.on,
                subject=subject,
                command=hook.command[:200],
                exit=code,
                ok=problem is None,
                problem=problem,
                output=(out or (err or "").strip())[:500],
                seconds=round(time.monotonic() - began, 3),
            )
        )
        return _Ran(code, out, (err or "").strip()[:OUT_MAX], problem)

    # -- the points ---------------------------------------------------------------------------

    def before_tool(self, name: str, args: JsonObject, data: Mapping[str, object]) -> HookDecision | None:
        """None when no hook matches; else why the call is blocked (or None) and its arguments."""
        hooks = self.matching("before_tool", name)
        if not hooks:
            return None
        for hook in hooks:
            r = self._run(hook, name, {**data, "hook": "before_tool", "tool": name, "args": args})
            if r.problem:
                why = r.out or r.err or f"the before_tool hook `{hook.command}` {r.problem}"
                return {"blocked": why, "args": args}
            new = _new_args(r.out)
            args = args if new is None else new
        return {"blocked": None, "args": args}

    def after_tool(self, name: str, args: JsonObject, result: str, data: Mapping[str, object]) -> str:
        for hook in self.matching("after_tool", name):
            r = self._run(
                hook, name, {**data, "hook": "after_tool", "tool": name, "args": args, "result": result}
            )
            note = r.out or (r.err if r.problem else "")
            if note:
                result += f"\n\n[after_tool hook `{hook.command}`]\n{note}"
        return result

    def before_post(self, draft: Post, data: Mapping[str, object]) -> str | None:
        """The reason a hook refuses the drafted post, or None."""
        post = {"kind": draft.kind, "text": draft.text, "handoff": draft.handoff}
        for hook in self.matching("before_post", draft.kind):
            r = self._run(hook, draft.kind, {**data, "hook": "before_post", "post": post})
            if r.problem:
                return r.out or r.err or f"the before_post hook `{hook.command}` {r.problem}"
        return None

    def after_post(self, post: Post, data: Mapping[str, object]) -> None:
        hooks = self.matching("after_post", post.kind)
        line = post.dump() if hooks else {}  # the post as thread.jsonl holds it
        for hook in hooks:
            self._run(hook, post.kind, {**data, "hook": "after_post", "post": line})

    def on_state(self, data: Mapping[str, object]) -> None:
        state = str(data["state"])
        for hook in self.matching("on_state", state):
            self._run(hook, state, {**data, "hook": "on_state"})


def _new_args(out: str) -> JsonObject | None:
    """The arguments a before_tool hook's stdout replaces the call's with (`{"args": {...}}`)."""
    if not out.startswith("{"):
        return None
    try:
        said: object = json.loads(out)
    except ValueError:
        return None
    new = said.get("args") if is_object(said) else None
    return new if is_object(new) else None
