"""`autodev replay [RUN | BUNDLE] [--tools recorded]`: re-run a recorded run offline and report
"identical" or the first divergence.

The run is re-executed by the real daemon (in this process) on a fresh clone at the run's base
commit, under an AUTODEV_HOME of its own: every generation is answered from the recording
(`recorded.RecordedModel`), the tools run for real (or, with `--tools recorded`, answer with the
recorded results), and the user's input (the objective, later messages, gate decisions, rewinds)
is handed in at the turn boundary where it arrived. Then the two runs are compared turn by turn: who was
scheduled and by which rule, the turn prompt, each tool result, the post and its credit; then
the remaining posts (user, system, audit) and the final state. Commit ids and the repository's
path are masked before comparing (a new commit has a new id).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from autodev.records.state import RunState
from autodev.store.journal import iter_records
from autodev.store.paths import RunPaths
from autodev.timeline import git
from autodev.timeline.live import rewind_of
from autodev.timeline.recorded import RecordedModel
from autodev.timeline.refused import ReplayRefused

SHA = re.compile(r"\b[0-9a-f]{7,40}\b")
# An agent turn's thread-tool call id names the CLI's pid (autodev/agents/stream.py): masked.
# read_thread shows each post's time: a replay's posts are made later.
TIME = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")
AGENT_CALL = re.compile(r"^(claude|codex|copilot|gemini)-\d+-(\d+)$")


@dataclass
class Recording:
    posts: list[dict]
    events: list[dict]
    harness: list[dict]
    config_dir: Path  # team.toml, config.toml, prompts/, a scripted team's script
    base: str
    source: Path  # a git repository, or a git bundle file, holding the base and the run's commits
    untrusted: bool = False  # a bundle: no hooks, MCP servers or agent CLI args; commands sandboxed
    repo_path: str = ""  # where the recorded repository was (masked in comparisons)
    run_dir: Path | None = None  # the run folder: its agents/ keeps the CLI runs' raw streams


@dataclass
class Divergence:
    turn: int | None
    step: str
    expected: str
    got: str

    def __str__(self) -> str:
        from autodev.guard.display import line

        # what a recording (a bundle from anyone) and its replay hold, shown as it is: a
        # terminal control sequence in a post or a tool's output is escaped, one line each
        where = f"turn {self.turn}, " if self.turn is not None else ""
        return f"diverged at {where}{line(self.step)}\n  expected: {line(self.expected)}\n  got:      {line(self.got)}"


def _records(path: Path) -> list[dict]:
    return list(iter_records(path)) if path.exists() else []


def base_of(harness: list[dict], state: RunState) -> str | None:
    first = next((r for r in harness if r.get("type") == "turn_started" and r.get("head")), None)
    return (first or {}).get("head") or state.base_head


def from_run(paths: RunPaths) -> Recording:
    """The run of this repository (its run folder and its git objects)."""
    from autodev.store.rebuild import read_state

    if not paths.thread.exists():
        raise ReplayRefused(f"there is no run in {paths.run_dir}", "run `autodev start` first")
    harness = _records(paths.harness_log)
    base = base_of(harness, read_state(paths))
    if not base:
        raise ReplayRefused("the run recorded no base commit", "replay a run that made at least one turn")
    config = paths.config_dir if (paths.config_dir / "team.toml").exists() else paths.run_dir / "team"
    return Recording(
        _records(paths.thread),
        _records(paths.events),
        harness,
        config,
        base,
        paths.repo,
        False,
        str(paths.repo),
        paths.run_dir,
    )


# -- running it again ----------------------------------------------------------------------------


@contextmanager
def _env(values: dict[str, str]) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _clone(rec: Recording, to: Path) -> None:
    git.clone(rec.source, to)
    git.git(to, "checkout", "-q", "-b", "autodev-replay", rec.base)
    git.git(to, "config", "user.name", "autodev replay")
    git.git(to, "config", "user.email", "replay@autodev.invalid")
    exclude = to / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    exclude.write_text(".autodev/\n__pycache__/\n")


def _config(rec: Recording, repo: Path) -> None:
    from autodev.timeline.safe import install_config, safe_config

    install_config(rec.config_dir, repo / ".autodev")
    if rec.untrusted:
        safe_config(repo / ".autodev")


def _feed(rec: Recording):
    """At each turn boundary: the user's input whose seq comes next, put in the inbox; a rewind
    the user made there is asked of the daemon again (and the run resumed, as the recording went
    on after it)."""
    from autodev.user import actions

    inputs = [p for p in rec.posts[1:] if p["from"] == "user" or _user_gate(p) or rewind_of(p)]
    last = rec.posts[-1]["seq"] if rec.posts else 0

    def feed(run) -> None:
        while inputs and inputs[0]["seq"] <= run.thread.last_seq + 1:
            p = inputs.pop(0)
            if p["seq"] != run.thread.last_seq + 1:
                continue  # the replay already went elsewhere: the comparison says where
            if rewind_of(p):
                _rewind_again(run, p, resume=p["seq"] < last)
                return  # the daemon applies it now; the next input waits for the next boundary
            if p["from"] == "user":
                actions.send(run.paths, p["text"])
            elif p["gate"]["decision"] == "approved":
                actions.approve(run.paths, str(p["gate"]["id"]))
            else:
                actions.deny(run.paths, str(p["gate"]["id"]), p["text"])

    return feed


def _rewind_again(run, note: dict, *, resume: bool) -> None:
    """Queue the recorded rewind (or its undo) as `autodev rewind` queues it for a daemon."""
    from autodev.store.queued import now_ns

    rw = note["rewind"]
    undo = bool(rw.get("undo_of"))
    run.state.request("rewind", seq=None if undo else rw["to_seq"], undo=undo, at=now_ns())
    if resume:
        run.state.request("resume", at=now_ns())


def _user_gate(p: dict) -> bool:
    g = p.get("gate")
    return (
        p["from"] == "system"
        and isinstance(g, dict)
        and g.get("by") == "the user"
        and g.get("decision") in ("approved", "denied")
    )


def run(rec: Recording, *, recorded_tools: bool = False, keep: Path | None = None) -> Divergence | None:
    """Replay `rec`; None when identical, else the first divergence."""
    agents = sorted({r["agent"] for r in rec.harness if r.get("type") == "agent_started"})
    if agents and rec.run_dir is None:
        raise ReplayRefused(
            f"this recording has coding-agent CLI turns ({', '.join(agents)}) but not their raw streams",
            "replay the run itself, or a bundle `autodev runs export` wrote (it keeps them)",
        )
    if rec.untrusted:
        _need_bubblewrap()
    work = Path(tempfile.mkdtemp(prefix="autodev-replay-")) if keep is None else keep
    try:
        repo = work / "repo"
        _clone(rec, repo)
        _config(rec, repo)
        _agents_recorded(rec, repo)
        from autodev.timeline import standin

        # Every agent CLI is the stand-in that plays the recorded runs back (SPEC §16's
        # AUTODEV_<NAME>_BIN, where the daemon finds every CLI), a recording with no CLI run
        # included: a replay never starts a real CLI.
        env = {"AUTODEV_HOME": str(work / "home")}
        env |= standin.prepare(rec.harness, rec.posts, rec.run_dir, work / "agents")
        with _env(env):
            return _run_here(rec, repo, recorded_tools)
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


def _need_bubblewrap() -> None:
    """A bundle's commands never run on the host: no working bubblewrap, no replay."""
    from autodev.guard.sandbox import PACKAGE, resolve

    box = resolve("auto")
    if not box.active:
        raise ReplayRefused(
            f"a bundle's commands run only in the bubblewrap sandbox, and {box.problem}",
            f"install the `{PACKAGE}` package (e.g. `apt-get install {PACKAGE}`) and replay again",
        )


def _agents_recorded(rec: Recording, repo: Path) -> None:
    """Refuse a coding-agent CLI participant the recording has no CLI run of: its turns could
    only be played by the CLI itself, and a replay starts none."""
    from autodev.config import load_team

    team = load_team(RunPaths(repo).team_file)
    who = {r["turn"]: r.get("participant") for r in rec.harness if r.get("type") == "turn_started"}
    ran = {who.get(r.get("turn")) for r in rec.harness if r.get("type") == "agent_started"}
    for p in team.participants:
        if p.agent and p.name not in ran:
            raise ReplayRefused(
                f'participant "{p.name}" is a {p.agent} CLI with no recorded CLI run in this '
                "recording, and a replay never starts a real CLI",
                "replay a run (or a bundle of one) in which it took its turns",
            )


def _run_here(rec: Recording, repo: Path, recorded_tools: bool) -> Divergence | None:
    from autodev.daemon.process import Daemon
    from autodev.user import actions

    paths = RunPaths(repo)
    paths.ensure()
    objective = next((p for p in rec.posts if p["from"] == "user"), None)
    if objective is None:
        raise ReplayRefused("the run has no objective", "replay a run that started")
    actions.send(paths, objective["text"])
    model = RecordedModel.of(rec.harness, rec.posts, rec.events, recorded_tools=recorded_tools, repo=repo)
    Daemon(repo, until_idle=True, model=model, feed=_feed(rec)).run()
    got = Recording(
        _records(paths.thread),
        _records(paths.events),
        _records(paths.harness_log),
        paths.config_dir,
        rec.base,
        repo,
    )
    return compare(
        rec, got, masks=[rec.repo_path, str(repo)], tools=not recorded_tools, missing=model.missing
    )


# -- comparing -----------------------------------------------------------------------------------


def _norm(text: object, masks: list[str]) -> str:
    s = str(text)
    for m in masks:
        if m:
            s = s.replace(m, "<repo>")
    return SHA.sub("<sha>", TIME.sub("<time>", s))


def _credit(post: dict) -> str:
    c = post.get("credit")
    if post.get("kind") != "work_done":
        return "-"
    if not c:
        return "not credited"
    return f"{len(c.get('commits') or [])} commit(s), files {sorted(c.get('files') or [])}"


def _turns(r: Recording) -> dict[int, dict]:
    out: dict[int, dict] = {}
    for e in r.events:
        if e.get("type") == "scheduled" and isinstance(e.get("turn"), int):
            out.setdefault(e["turn"], {})["scheduled"] = f"{e.get('participant')} ({e.get('rule')})"
    for h in r.harness:
        t = h.get("turn")
        if not isinstance(t, int):
            continue
        slot = out.setdefault(t, {})
        if h.get("type") == "turn_started" and "prompt" not in slot:
            slot["prompt"] = "\n".join(str(m.get("content")) for m in h.get("messages") or [])
        elif h.get("type") == "tool_finished":
            slot.setdefault("tools", []).append((AGENT_CALL.sub(r"\1-\2", str(h["call_id"])), h["result"]))
        elif h.get("type") == "agent_started":
            slot.setdefault("agents", []).append(str(h.get("agent")))
    for p in r.posts:
        if isinstance(p.get("turn"), int):
            out.setdefault(p["turn"], {})["post"] = p
    return out


def _post_line(p: dict | None, masks: list[str], tests: bool = False) -> str:
    if p is None:
        return "(no post)"
    handoff = f" -> {p['handoff']}" if p.get("handoff") else ""
    # The evidence of a done is re-checked like a tool's result: its tests ran again on the clone.
    ev = p.get("evidence")
    shown = f" [tests: {ev.get('summary')}]" if tests and isinstance(ev, dict) else ""
    return f"#{p['seq']} {p['from']} {p['kind']}{handoff}: {_norm(p.get('text', ''), masks)[:300]}{shown}"


def compare(
    want: Recording, got: Recording, *, masks: list[str], tools: bool = True, missing: list[str] | None = None
) -> Divergence | None:
    """The first difference between the recorded run `want` and its replay `got`."""
    a, b = _turns(want), _turns(got)
    for turn in sorted(set(a) | set(b)):
        x, y = a.get(turn, {}), b.get(turn, {})
        if x.get("scheduled") != y.get("scheduled"):
            return Divergence(turn, "scheduler decision", str(x.get("scheduled")), str(y.get("scheduled")))
        px, py = _norm(x.get("prompt", ""), masks), _norm(y.get("prompt", ""), masks)
        if px != py:
            return Divergence(turn, "turn prompt", *_first_difference(px, py))
        if x.get("agents", []) != y.get("agents", []):
            runs = (", ".join(z.get("agents", [])) or "(none)" for z in (x, y))
            return Divergence(turn, "agent CLI runs", *runs)
        if tools:
            tx, ty = x.get("tools", []), y.get("tools", [])
            for i in range(max(len(tx), len(ty))):
                ex = f"{tx[i][0]}: {_norm(tx[i][1], masks)}" if i < len(tx) else "(no call)"
                gy = f"{ty[i][0]}: {_norm(ty[i][1], masks)}" if i < len(ty) else "(no call)"
                if ex != gy:
                    return Divergence(turn, f"tool result {i + 1}", ex[:600], gy[:600])
        lx, ly = _post_line(x.get("post"), masks), _post_line(y.get("post"), masks)
        if lx != ly:
            return Divergence(turn, "post", lx, ly)
        if x.get("post") and _credit(x["post"]) != _credit(y["post"]):
            return Divergence(turn, "credit", _credit(x["post"]), _credit(y["post"]))
    others = [p for p in want.posts if not isinstance(p.get("turn"), int)]
    mine = [p for p in got.posts if not isinstance(p.get("turn"), int)]
    for i in range(max(len(others), len(mine))):
        lx = _post_line(others[i] if i < len(others) else None, masks, tools)
        ly = _post_line(mine[i] if i < len(mine) else None, masks, tools)
        if lx != ly:
            return Divergence(None, "post (user, system or audit)", lx, ly)
    if missing:
        return Divergence(None, "the recording", "an answer for every request", f"none for {missing[0]}")
    return None


def _first_difference(a: str, b: str) -> tuple[str, str]:
    """The first differing line of two texts, with its number."""
    la, lb = a.splitlines(), b.splitlines()
    for i in range(max(len(la), len(lb))):
        if (la[i] if i < len(la) else None) != (lb[i] if i < len(lb) else None):
            x = " / ".join(la[i : i + 3]) or "(end)"
            y = " / ".join(lb[i : i + 3]) or "(end)"
            return f"line {i + 1}: {x[:300]}", f"line {i + 1}: {y[:300]}"
    return a[:300], b[:300]
