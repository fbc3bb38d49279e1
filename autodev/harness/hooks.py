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

from autodev.host.procgroup import run_json
from autodev.records.events import HookEvent

OUT_MAX = 4000


class Hooks:
    def __init__(self, hooks: list, repo, env: dict, emit, base: dict, room=None):
        self.hooks, self.repo, self.env, self.emit, self.base = list(hooks), repo, env, emit, base
        self.room = room  # guard/sandbox.Room where hooks run; None: no sandbox is in use

    def matching(self, on: str, subject: str) -> list:
        return [h for h in self.hooks if h.on == on and fnmatch.fnmatchcase(subject, h.match)]

    def _run(self, hook, subject: str, data: dict) -> dict:
        """Run one hook; returns {exit, out, problem}: problem is None when it exited 0."""
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
        return {"exit": code, "out": out, "err": (err or "").strip()[:OUT_MAX], "problem": problem}

    # -- the points ---------------------------------------------------------------------------

    def before_tool(self, name: str, args: dict, data: dict) -> dict | None:
        """None when no hook matches; else {"blocked": reason or None, "args": effective args}."""
        hooks = self.matching("before_tool", name)
        if not hooks:
            return None
        for hook in hooks:
            r = self._run(hook, name, {**data, "hook": "before_tool", "tool": name, "args": args})
            if r["problem"]:
                why = r["out"] or r["err"] or f"the before_tool hook `{hook.command}` {r['problem']}"
                return {"blocked": why, "args": args}
            if r["out"].startswith("{"):
                try:
                    new = json.loads(r["out"]).get("args")
                except (ValueError, AttributeError):
                    new = None
                if isinstance(new, dict):
                    args = new
        return {"blocked": None, "args": args}

    def after_tool(self, name: str, args: dict, result: str, data: dict) -> str:
        for hook in self.matching("after_tool", name):
            r = self._run(
                hook, name, {**data, "hook": "after_tool", "tool": name, "args": args, "result": result}
            )
            note = r["out"] or (r["err"] if r["problem"] else "")
            if note:
                result += f"\n\n[after_tool hook `{hook.command}`]\n{note}"
        return result

    def before_post(self, post: dict, data: dict) -> str | None:
        """The reason a hook refuses the post, or None."""
        for hook in self.matching("before_post", post["kind"]):
            r = self._run(hook, post["kind"], {**data, "hook": "before_post", "post": post})
            if r["problem"]:
                return r["out"] or r["err"] or f"the before_post hook `{hook.command}` {r['problem']}"
        return None

    def after_post(self, post: dict, data: dict) -> None:
        for hook in self.matching("after_post", post["kind"]):
            self._run(hook, post["kind"], {**data, "hook": "after_post", "post": post})

    def on_state(self, data: dict) -> None:
        for hook in self.matching("on_state", data["state"]):
            self._run(hook, data["state"], {**data, "hook": "on_state"})
