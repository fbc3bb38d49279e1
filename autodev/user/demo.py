"""`autodev demo`: a whole scripted run, offline, on a throwaway repository.

A trio (builder writes; reviewer and tester read) works on a tiny objective through every core
move: credited and uncredited work_done, a review, handoffs, the A-B-A-B breaker, a `done` the
audit reopens, the fix, and a `done` the audit accepts. The model is the scripted server, reached
over real HTTP through litellm, so the demo exercises the same path as a real run.
"""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from pathlib import Path

from autodev.host import hostgit, spawn

OBJECTIVE = "Add a greet(name) function in greet.py, with a test, and document it in README.md."

TEAM = """\
[[participants]]
name = "builder"
model = "scripted"
write = true
lane = "Implements the objective in small commits."

[[participants]]
name = "reviewer"
model = "scripted"
write = false
lane = "Reviews each change."

[[participants]]
name = "tester"
model = "scripted"
write = false
lane = "Runs the tests and breaks deadlocks."

[audit]
model = "scripted"

[scripted]
path = "script.toml"
"""

SCRIPT = """\
# builder, turn 1: write and commit, then a credited work_done
[[step]]
participant = "builder"
calls = [
  { tool = "write_file", args = { path = "greet.py", content = "def greet(name):\\n    return f\\"Hello, {name}!\\"\\n" } },
  { tool = "run_command", args = { command = "git add -A && git commit -qm 'add greet()'" } },
]
[[step]]
participant = "builder"
calls = [{ tool = "post", args = { kind = "work_done", text = "greet() added in greet.py", handoff = "reviewer" } }]

# reviewer reads and asks for a test
[[step]]
participant = "reviewer"
calls = [{ tool = "read_file", args = { path = "greet.py" } }]
[[step]]
participant = "reviewer"
calls = [{ tool = "post", args = { kind = "say", text = "Review: greet() reads well, but there is no test.", handoff = "builder" } }]

# builder claims work without changing anything: not credited
[[step]]
participant = "builder"
calls = [{ tool = "post", args = { kind = "work_done", text = "Docstring polished (I think).", handoff = "reviewer" } }]

# an argument going nowhere: reviewer and builder alternate without work
[[step]]
participant = "reviewer"
calls = [{ tool = "post", args = { kind = "say", text = "git shows no change; that work_done was not credited. Please add the test.", handoff = "builder" } }]
[[step]]
participant = "builder"
calls = [{ tool = "post", args = { kind = "say", text = "Is a test really needed for a one-liner?", handoff = "reviewer" } }]
[[step]]
participant = "reviewer"
calls = [{ tool = "post", args = { kind = "say", text = "Yes: the objective asks for one.", handoff = "builder" } }]
[[step]]
participant = "builder"
calls = [{ tool = "post", args = { kind = "say", text = "Fine, but the README first?", handoff = "reviewer" } }]

# the A-B-A-B breaker gives the turn to the tester, who settles it
[[step]]
participant = "tester"
calls = [{ tool = "post", args = { kind = "handoff", text = "Breaking the loop: builder, add test_greet.py now.", handoff = "builder" } }]

[[step]]
participant = "builder"
calls = [
  { tool = "write_file", args = { path = "test_greet.py", content = "import unittest\\nfrom greet import greet\\n\\nclass T(unittest.TestCase):\\n    def test_greet(self):\\n        self.assertEqual(greet('Ada'), 'Hello, Ada!')\\n\\nif __name__ == '__main__':\\n    unittest.main()\\n" } },
  { tool = "run_command", args = { command = "git add -A && git commit -qm 'test greet()'" } },
]
[[step]]
participant = "builder"
calls = [{ tool = "post", args = { kind = "work_done", text = "test_greet.py added", handoff = "tester" } }]

[[step]]
participant = "tester"
calls = [{ tool = "run_command", args = { command = "python3 -m unittest -q test_greet 2>&1 | tail -3" } }]
[[step]]
participant = "tester"
calls = [{ tool = "post", args = { kind = "say", text = "Tests pass (1 test).", handoff = "builder" } }]

# builder declares done too early: the audit reopens
[[step]]
participant = "builder"
calls = [{ tool = "post", args = { kind = "done", text = "greet() and its test are in." } }]
[[step]]
participant = "audit"
calls = [{ tool = "verdict", args = { accept = false, gap = "README.md does not document greet()." } }]

# the fix, a credited self-handoff, and done again
[[step]]
participant = "builder"
calls = [
  { tool = "write_file", args = { path = "README.md", content = "# greet\\n\\n`greet(name)` returns a greeting.\\n" } },
  { tool = "run_command", args = { command = "git add -A && git commit -qm 'document greet()'" } },
]
[[step]]
participant = "builder"
calls = [{ tool = "post", args = { kind = "work_done", text = "README documents greet()", handoff = "builder" } }]
[[step]]
participant = "builder"
calls = [{ tool = "post", args = { kind = "done", text = "greet(), its test and its documentation are in." } }]
[[step]]
participant = "audit"
calls = [{ tool = "verdict", args = { accept = true, gap = "" } }]
"""


def _git(repo: Path, *args: str) -> None:
    if args and args[0] == "init":  # nothing to pin yet
        spawn.run(
            [hostgit.git_binary(), *args],
            "git",
            cwd=repo,
            check=True,
            capture_output=True,
            env=hostgit.git_env(),
        )
        return
    hostgit.out(repo, *args)


def make_repo(root: Path) -> Path:
    repo = root / "demo-repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.name", "autodev demo")
    _git(repo, "config", "user.email", "demo@autodev.invalid")
    (repo / ".gitignore").write_text("__pycache__/\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "start")
    cfg = repo / ".autodev"
    cfg.mkdir()
    (cfg / "team.toml").write_text(TEAM)
    (cfg / "script.toml").write_text(SCRIPT)
    (cfg / "config.toml").write_text(
        'waitFirstSec = 0.1\nwaitCapSec = 0.4\nauditCheck = "python3 -m unittest -q 2>&1 | tail -3"\n'
    )
    # The run's own config is not part of the work under review.
    (repo / ".git" / "info" / "exclude").write_text(".autodev/\n")
    return repo


def run_demo(keep: bool = False) -> int:
    from autodev.daemon import Daemon
    from autodev.store.inbox import drop
    from autodev.store.paths import RunPaths
    from autodev.store.state import StateFile
    from autodev.user.render import Line, console, post_text

    con = console()
    root = Path(tempfile.mkdtemp(prefix="autodev-demo-"))
    old_home = os.environ.get("AUTODEV_HOME")
    os.environ["AUTODEV_HOME"] = str(root / "home")
    try:
        repo = make_repo(root)
        paths = RunPaths(repo)
        paths.ensure()
        con.print(f"[bold]autodev demo[/] — a scripted trio on a throwaway repository: {repo}\n")
        drop(paths.inbox, "send", text=OBJECTIVE, objective=True)

        def echo(post: Line) -> None:
            con.print(post_text(post))

        code = Daemon(repo, until_idle=True, out=echo).run()
        st = StateFile(paths.state).read()
        con.print()
        con.print(f"[bold]run {st.state}[/] — exit {code}")
        for name, f in sorted(st.participants.items()):
            con.print(
                f"  {name:<9} turns {f.turns:>2}  credited {f.credited}  "
                f"tokens {f.prompt_tokens + f.completion_tokens}"
            )
        log = hostgit.run(repo, "log", "--oneline", check=False)
        con.print("\n[bold]git log[/]\n" + log.stdout)
        if keep:
            # The run's folder is under the demo's own AUTODEV_HOME, not the user's: say how to reach it.
            con.print(f"kept: {root}\nlook at the kept run with:", highlight=False)
            con.print(f"  cd {shlex.quote(str(repo))}", highlight=False, soft_wrap=True)
            con.print(
                f"  AUTODEV_HOME={shlex.quote(str(root / 'home'))} autodev status   (or: autodev panel)",
                highlight=False,
                soft_wrap=True,
            )
        return 0 if code == 0 and st.state == "complete" else 1
    finally:
        if old_home is None:
            os.environ.pop("AUTODEV_HOME", None)
        else:
            os.environ["AUTODEV_HOME"] = old_home
        if keep:
            _list_in_users_index(root / "home")
        else:
            shutil.rmtree(root, ignore_errors=True)


def _list_in_users_index(demo_home: Path) -> None:
    """A kept demo's run, listed by `autodev runs` in the user's own AUTODEV_HOME too (its run
    folder stays in the demo's: `runs prune` can remove it like any other)."""
    import json

    from autodev.store import runs

    try:
        lines = (demo_home / "index.jsonl").read_text().splitlines()
    except OSError:
        return
    for line in lines:
        if line.strip():
            runs.append(json.loads(line))
