"""What the end-to-end tests share: scripted teams, script builders, readers of a run's files
(safe while a daemon appends to them) and small drivers of the real CLI and daemon.

Fixtures and the repository-level helpers (`repo`, `autodev`, `write_team`, `thread_of`,
`shape`, `run_dir`, `git`) live in tests/conftest.py.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from datetime import datetime
from pathlib import Path

from tests.conftest import run_dir

# -- scripted teams -----------------------------------------------------------------------------


def team_of_one(name: str, extra: str = "") -> str:
    """A scripted team of one writer, with a scripted audit; `extra` adds participant keys."""
    return f"""
[[participants]]
name = "{name}"
model = "scripted"
write = true
{extra}
[audit]
model = "scripted"

[scripted]
path = "script.toml"
"""


SOLO = team_of_one("solo")
BUILDER = team_of_one("builder")

PAIR = """
[[participants]]
name = "alice"
model = "scripted"
write = true

[[participants]]
name = "bob"
model = "scripted"
write = false

[audit]
model = "scripted"

[scripted]
path = "script.toml"
"""

# A builder who writes and a reviewer (no `write` key: the default).
BUILDER_REVIEWER = """
[[participants]]
name = "builder"
model = "scripted"
write = true

[[participants]]
name = "reviewer"
model = "scripted"

[audit]
model = "scripted"

[scripted]
path = "script.toml"
"""

# -- script builders ----------------------------------------------------------------------------


def _toml(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml(x)}" for k, x in v.items()) + " }"
    return json.dumps(v)  # a JSON string is a valid TOML basic string


def call(tool: str, **args) -> dict:
    return {"tool": tool, "args": args}


def step(
    who: str, *calls: dict, text: str | None = None, error: int | None = None, delay_sec: float = 0
) -> str:
    """One [[step]] of a script: tool calls, plain text, or an HTTP error (the first answer
    `delay_sec` late)."""
    lines = ["[[step]]", f"participant = {_toml(who)}"]
    if delay_sec:
        lines.append(f"delay_sec = {delay_sec}")
    if calls:
        lines.append("calls = [" + ", ".join(_toml(c) for c in calls) + "]")
    if text is not None:
        lines.append(f"text = {_toml(text)}")
    if error is not None:
        lines.append(f"error = {error}")
    return "\n".join(lines) + "\n"


def post(who: str, kind: str, text: str, handoff: str | None = None) -> str:
    args = {"kind": kind, "text": text}
    if handoff:
        args["handoff"] = handoff
    return step(who, call("post", **args))


ACCEPT = step("audit", call("verdict", accept=True, gap=""))


def done_accepted(who: str, text: str = "finished") -> str:
    """`who` posts done and the audit accepts it: the end of most scripts."""
    return post(who, "done", text) + ACCEPT


# -- scripts shared by the CLI and panel tests --------------------------------------------------

# bob asks the user; after the answer bob (not alice, who would be silent longest) speaks.
QUESTION_SCRIPT = """
[[step]]
participant = "alice"
calls = [{ tool = "post", args = { kind = "say", text = "bob, what colour?", handoff = "bob" } }]
[[step]]
participant = "bob"
calls = [{ tool = "post", args = { kind = "say", text = "User: red or blue?", handoff = "user" } }]
[[step]]
participant = "bob"
calls = [{ tool = "post", args = { kind = "done", text = "the user chose blue" } }]
[[step]]
participant = "audit"
calls = [{ tool = "verdict", args = { accept = true, gap = "" } }]
"""

# alice's first turn runs a slow command so `pause` arrives while the turn is in flight.
SLOW_SCRIPT = """
[[step]]
participant = "alice"
calls = [{ tool = "run_command", args = { command = "sleep 3" } }]
[[step]]
participant = "alice"
calls = [{ tool = "post", args = { kind = "say", text = "slept", handoff = "bob" } }]
[[step]]
participant = "bob"
calls = [{ tool = "post", args = { kind = "say", text = "Ready?", handoff = "user" } }]
[[step]]
participant = "bob"
calls = [{ tool = "post", args = { kind = "done", text = "all set" } }]
[[step]]
participant = "audit"
calls = [{ tool = "verdict", args = { accept = true, gap = "" } }]
"""

GATE_SCRIPT = """
[[step]]
participant = "alice"
calls = [{ tool = "post", args = { kind = "gate", text = "git push origin main" } }]
[[step]]
participant = "alice"
calls = [{ tool = "post", args = { kind = "done", text = "pushed after the gate" } }]
[[step]]
participant = "audit"
calls = [{ tool = "verdict", args = { accept = true, gap = "" } }]
"""

# -- reading a run's files ----------------------------------------------------------------------


def records_of(path: Path) -> list[dict]:
    """A JSONL file read while a daemon may be appending: an unfinished last line is skipped."""
    if not path.exists():
        return []
    text = path.read_text()
    lines = text.splitlines()
    if lines and not text.endswith("\n"):
        lines.pop()
    return [json.loads(line) for line in lines if line.strip()]


def events_of(repo) -> list[dict]:
    return records_of(run_dir(repo) / "events.jsonl")


def events(repo, type_: str) -> list[dict]:
    return [e for e in events_of(repo) if e["type"] == type_]


def scheduled(repo) -> list[tuple[str, str]]:
    return [(e["participant"], e["rule"]) for e in events(repo, "scheduled")]


def requests_of(repo, participant: str | None = None) -> list[dict]:
    """What the scripted model server received, optionally of one participant only."""
    reqs = records_of(run_dir(repo) / "scripted-requests.jsonl")
    return [q for q in reqs if participant is None or q["participant"] == participant]


def turns_of(repo, participant: str) -> list[list[dict]]:
    """The participant's requests grouped by turn, in order."""
    out: dict[str, list[dict]] = {}
    for q in requests_of(repo, participant):
        out.setdefault(q["turn"], []).append(q)
    return list(out.values())


def prompt_of(request: dict) -> str:
    """The turn prompt: the first user message of the request."""
    return next(m["content"] for m in request["body"]["messages"] if m.get("role") == "user")


def tool_names(request: dict) -> set[str]:
    return {t["function"]["name"] for t in request["body"].get("tools") or []}


def tool_results(request: dict) -> list[str]:
    return [m["content"] for m in request["body"]["messages"] if m.get("role") == "tool"]


def state_of(repo) -> dict:
    p = run_dir(repo) / "state.json"
    return json.loads(p.read_text()) if p.exists() else {}


def ts(e: dict) -> float:
    return datetime.fromisoformat(e["ts"].replace("Z", "+00:00")).timestamp()


# -- driving the CLI and the daemon -------------------------------------------------------------

WIDE = {"COLUMNS": "240"}  # keep rich from wrapping the status text


def cli(autodev, repo, *args: str) -> str:
    r = autodev(repo, *args)
    assert r.returncode == 0, f"autodev {' '.join(args)} exited {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r.stdout


def status_json(autodev, repo) -> dict:
    return json.loads(autodev(repo, "status", "--json", check=True).stdout)


def status_text(autodev, repo) -> str:
    """`autodev status` as plain text, whitespace collapsed so line wrapping does not matter."""
    return " ".join(autodev(repo, "status", check=True, env=WIDE).stdout.split())


def wait_for(what: str, check, timeout: float = 30.0, step_sec: float = 0.05):
    """Poll `check()` until it returns something truthy; fail naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(step_sec)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def run_until_idle(autodev, repo, *args: str, expect: int) -> None:
    r = autodev(repo, "start", "--foreground", "--until-idle", *args, timeout=60)
    assert r.returncode == expect, f"exit {r.returncode}\n{r.stdout}\n{r.stderr}"


def start_detached(autodev, repo, *args: str) -> int:
    r = autodev(repo, "start", *args, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"daemon started \(pid (\d+)\)", r.stdout)
    assert m, r.stdout + r.stderr
    pid = int(m.group(1))
    autodev.adopt(pid)  # its own session: teardown kills it even if the test fails
    return pid


def stop_daemon(autodev, repo) -> None:
    """`autodev stop` through the console script, then `status` polled in-process (a poll
    through a subprocess costs a Python start-up each) until no daemon holds the run."""
    import pytest

    from tests.inprocess import InProcess

    r = autodev(repo, "stop")
    assert r.returncode == 0, r.stderr
    inproc = InProcess(pytest.MonkeyPatch())  # each call undoes its own patches
    wait_for("the daemon to exit", lambda: status_json(inproc, repo)["daemon_pid"] is None)


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# -- processes ------------------------------------------------------------------------------------


def running(pid: int) -> bool:
    """Whether `pid` runs (neither gone nor a zombie)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def sleepers(marker: str) -> list[int]:
    """The running `sleep 240` processes whose environment holds ORPHAN_MARK=`marker` (a
    participant's command `ORPHAN_MARK=... sleep 240`), found in /proc."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if (d / "cmdline").read_bytes() != b"sleep\x00240\x00":
                continue
            if f"ORPHAN_MARK={marker}".encode() not in (d / "environ").read_bytes().split(b"\0"):
                continue
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if running(int(d.name)):
            found.append(int(d.name))
    return found
