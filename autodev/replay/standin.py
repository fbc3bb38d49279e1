"""The stand-in CLI of a replay: each coding-agent CLI of the replayed run is this program,
found by the daemon where it finds the real one (`AUTODEV_<NAME>_BIN`, SPEC §16), so an agent
turn is taken exactly as it was recorded and checked exactly as a live one.

`prepare` (the replay's side) writes the recorded CLI runs, in the order they were started, into
a folder of plays with one launcher per CLI. Each launch of a CLI (`main`, the stand-in's side)
takes the next play: it writes the recorded stderr and, line by line, the recorded stream to
stdout, and where a line shows a call of autodev's thread tools (`post`, `read_thread`,
`tell_user`), makes that call with the recorded arguments on the turn's bridge, found in the MCP
configuration the daemon gave this launch, as autodev's MCP server forwards it (the stdio MCP
layer, a forwarder, is not started: it costs seconds of imports per run). It exits
with the recorded exit code. The CLI's own tools (its shell, its file edits) are not run again:
before its `post`, the repository takes the commit the post was made on, so the credit is
compared as recorded (docs/DECISIONS.md, "Replay and bundles").
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from autodev.store.journal import JsonObject, is_object
from autodev.timeline.safe import is_array

if TYPE_CHECKING:  # the stand-in's side never loads the records (pydantic): it starts per CLI run
    from autodev.records import AgentFinished, AgentStarted, HarnessRecord, Post

SERVER = "autodev"
THREAD_TOOLS = ("post", "read_thread", "tell_user")
SHA = re.compile(r"[0-9a-f]{7,40}")
STREAM = re.compile(r"agents/t\d+-\d+-[a-z]+\.jsonl")


class Play(TypedDict):
    """One recorded CLI run, as plays.json holds it for the stand-in."""

    agent: str
    turn: int
    head: str | None  # the commit its post was made on
    exit_code: int


# -- the replay's side ----------------------------------------------------------------------------


def prepare(
    harness: list[HarnessRecord], posts: list[Post], run_dir: Path | None, into: Path
) -> dict[str, str]:
    """The plays of the recorded CLI runs in `into`, and the variables that make every agent
    CLI this stand-in (a CLI the recording never ran included, and with no recorded run at all:
    a replay calls no real CLI). `run_dir`: where the streams are (None: a recording that has
    no CLI run)."""
    from autodev.agents.adapters import ADAPTERS
    from autodev.host.hostproc import PYTHON_SAFE
    from autodev.records import AgentFinished, AgentStarted

    heads = {p.turn: p.head for p in posts if isinstance(p.turn, int)}
    plays: list[Play] = []
    started: dict[int, Play] = {}
    streams = into / "streams"
    streams.mkdir(parents=True, exist_ok=True)
    for r in harness:
        match r:
            case AgentStarted():
                src = _stream(r, run_dir)
                n = len(plays)
                shutil.copyfile(src, streams / f"{n}.jsonl")
                err = src.with_suffix(".stderr")
                (streams / f"{n}.stderr").write_text(err.read_text(errors="replace") if err.is_file() else "")
                head = heads.get(r.turn)
                plays.append(
                    {
                        "agent": r.agent,
                        "turn": r.turn,
                        "head": head if isinstance(head, str) and SHA.fullmatch(head) else None,
                        "exit_code": 1,  # a run the daemon's crash cut short has no recorded end
                    }
                )
                started[r.pid or 0] = plays[-1]
            case AgentFinished() if _pid(r) in started:
                code = r.exit_code
                started.pop(_pid(r))["exit_code"] = code if isinstance(code, int) else 1
            case _:
                pass  # the rest of a turn: the stand-in plays the CLI's own stream
    (into / "plays.json").write_text(json.dumps(plays, indent=1))
    (into / "next").write_text("0")
    env: dict[str, str] = {}
    for name, ad in ADAPTERS.items():
        launcher = into / "bin" / name
        launcher.parent.mkdir(exist_ok=True)
        cmd = [sys.executable, *PYTHON_SAFE, "-m", "autodev.replay.standin", str(into), name]
        launcher.write_text(f'#!/bin/sh\nexec {shlex.join(cmd)} "$@"\n')
        launcher.chmod(0o755)
        env[ad.bin_env] = str(launcher)
    return env


def _stream(r: AgentStarted, run_dir: Path | None) -> Path:
    """The raw stream the recorded CLI run wrote, checked: a bundle's harness log is untrusted,
    so only a stream of its own agents/ folder."""
    from autodev.replay.refused import ReplayRefused

    stream = r.stream or ""
    if run_dir is None:
        raise ReplayRefused(
            f"turn {r.turn}: the recording keeps no raw stream of its {r.agent} run",
            "replay the run folder or a bundle that kept its agents/ (`autodev runs export`)",
        )
    src = run_dir / stream
    if not STREAM.fullmatch(stream) or src.is_symlink() or not src.is_file():
        raise ReplayRefused(
            f"turn {r.turn}: the raw stream of its {r.agent} run is missing ({src})",
            "replay the run folder or a bundle that kept its agents/ (`autodev runs export`)",
        )
    return src


def _pid(r: AgentFinished) -> int:
    """The process an `agent_finished` record ends (its `pid`, a field the model does not
    declare), 0 when it has none."""
    pid: object = (r.model_extra or {}).get("pid")
    return pid if isinstance(pid, int) else 0


# -- the stand-in's side --------------------------------------------------------------------------


def thread_calls(agent: str, obj: object) -> list[tuple[str, JsonObject]]:
    """The calls of autodev's thread tools one line of `agent`'s stream shows, as (tool,
    arguments): the lines each adapter reads a tool call from (autodev/agents/adapters.py), each
    call shown once. The lines are the CLI's own JSON, not autodev's records."""
    from autodev.agents.invocation import short_name

    if not is_object(obj):
        return []
    found: list[tuple[str, object]] = []
    match agent, obj:  # each CLI's own line, told by its "type"
        case "claude", {"type": "assistant"}:
            content = _table(obj.get("message")).get("content")
            for b in content if is_array(content) else []:
                match b:
                    case {"type": "tool_use"} if is_object(b):
                        found.append((short_name(str(b.get("name", ""))), b.get("input")))
                    case _:
                        pass  # a text or thinking block
        case "codex", {"type": "item.started", "item": {"type": "mcp_tool_call", "server": str(s)}} if (
            s == SERVER
        ):
            item = _table(obj.get("item"))
            found.append((str(item.get("tool", "")), item.get("arguments")))
        case "copilot", {"type": "tool.execution_start"}:
            d = _table(obj.get("data"))
            found.append((short_name(str(d.get("toolName") or d.get("name") or "")), d.get("arguments")))
        case "gemini", {"type": "tool_use"}:
            name = short_name(str(obj.get("tool_name") or obj.get("name") or ""))
            found.append((name, obj.get("parameters")))
        case _:
            pass  # a line that calls no tool
    out: list[tuple[str, JsonObject]] = []
    for name, args in found:
        if isinstance(args, str):
            args = _json(args)
        if name in THREAD_TOOLS:
            out.append((name, _table(args)))
    return out


def _table(value: object) -> JsonObject:
    """A JSON object, or an empty one for anything else."""
    return value if is_object(value) else {}


def mcp_launch(agent: str, argv: list[str], environ: dict[str, str]) -> JsonObject:
    """autodev's MCP server ({command, args, env}) as this CLI finds it in its invocation
    (autodev/agents/adapters.py writes it there)."""

    def opt(name: str) -> str:
        if name not in argv:
            raise SystemExit(f"stand-in {agent}: no {name} in the invocation")
        return argv[argv.index(name) + 1]

    if agent == "claude":
        return json.loads(Path(opt("--mcp-config")).read_text())["mcpServers"][SERVER]
    if agent == "copilot":
        return json.loads(opt("--additional-mcp-config"))["mcpServers"][SERVER]
    if agent == "gemini":
        settings = Path(environ["GEMINI_CLI_SYSTEM_SETTINGS_PATH"])
        return json.loads(settings.read_text())["mcpServers"][SERVER]
    conf: dict[str, object] = {}
    for i, a in enumerate(argv[:-1]):
        if a == "-c":
            key, _, value = argv[i + 1].partition("=")
            conf[key] = tomllib.loads(f"v = {value}")["v"]
    p = f"mcp_servers.{SERVER}."
    return {"command": conf[p + "command"], "args": conf.get(p + "args", []), "env": conf.get(p + "env", {})}


def _take(plays_dir: Path, agent: str) -> tuple[int, Play] | None:
    """The next recorded run, when it is one of `agent`'s (the replay is one turn at a time)."""
    plays: list[Play] = json.loads((plays_dir / "plays.json").read_text())  # `prepare` wrote it
    n = int((plays_dir / "next").read_text() or 0)
    if n >= len(plays) or plays[n]["agent"] != agent:
        want = plays[n]["agent"] if n < len(plays) else "no CLI run"
        print(f"stand-in {agent}: run {n + 1} of the recording is {want}, not {agent}", file=sys.stderr)
        return None
    (plays_dir / "next").write_text(str(n + 1))
    return n, plays[n]


def _play(agent: str, lines: list[str], play: Play, server: JsonObject) -> None:
    from autodev.agents import bridge

    env = _table(server.get("env"))
    for line in lines:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        for name, args in thread_calls(agent, _json(line)):
            if name == "post" and play["head"]:
                # The CLI's own edits are not re-run: the repository takes the commit its post
                # was made on (the credit is then the recorded one).
                from autodev.errors import AutodevError
                from autodev.host import hostgit  # the replayed repository's config runs nothing

                try:
                    r = hostgit.run(Path.cwd(), "reset", "-q", "--hard", play["head"], check=False)
                    failed = r.stderr if r.returncode else ""
                except AutodevError as e:  # a .git hostgit refuses: named, nothing run
                    failed = str(e)
                if failed:
                    print(f"stand-in {agent}: git reset to {play['head']}: {failed}", file=sys.stderr)
            # What autodev's MCP server forwards for this call (autodev/agents/server.py), on the
            # turn's socket with its token.
            # (bridge.call's `args` is a plain dict: "partly unknown" to the checker)
            bridge.call(
                str(env["AUTODEV_AGENT_SOCKET"]),
                str(env["AUTODEV_AGENT_TOKEN"]),
                name,
                {k: v for k, v in args.items() if v is not None},
            )


def main(argv: list[str]) -> int:
    plays_dir, agent, rest = Path(argv[0]), argv[1], argv[2:]
    taken = _take(plays_dir, agent)
    if taken is None:
        return 2
    n, play = taken
    sys.stderr.write((plays_dir / "streams" / f"{n}.stderr").read_text())
    sys.stderr.flush()
    lines = (plays_dir / "streams" / f"{n}.jsonl").read_text().splitlines()
    needs_server = any(thread_calls(agent, _json(line)) for line in lines)
    server = mcp_launch(agent, rest, dict(os.environ)) if needs_server else {}
    _play(agent, lines, play, server)
    return play["exit_code"]


def _json(line: str) -> object:
    try:
        return json.loads(line)
    except ValueError:
        return None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
