"""The whole core path through the real CLI: a scripted pair, credited work, done accepted."""

from tests.conftest import shape, thread_of, write_team
from tests.e2e.helpers import BUILDER_REVIEWER

SCRIPT = """
[[step]]
participant = "builder"
calls = [
  { tool = "write_file", args = { path = "a.txt", content = "a\\n" } },
  { tool = "run_command", args = { command = "git add -A && git commit -qm a" } },
]
[[step]]
participant = "builder"
calls = [{ tool = "post", args = { kind = "work_done", text = "a added", handoff = "reviewer" } }]
[[step]]
participant = "reviewer"
calls = [{ tool = "post", args = { kind = "done", text = "all good" } }]
[[step]]
participant = "audit"
calls = [{ tool = "verdict", args = { accept = true, gap = "" } }]
"""


def test_pair_runs_to_accepted_done(repo, autodev, inproc):
    write_team(repo, BUILDER_REVIEWER, SCRIPT)
    r = autodev(repo, "start", "--foreground", "--until-idle", "add a.txt")
    assert r.returncode == 0, r.stdout + r.stderr
    assert shape(thread_of(repo)) == [
        ("user", "say", None, None),
        ("builder", "work_done", "reviewer", True),
        ("reviewer", "done", None, None),
        ("audit", "say", None, None),
    ]
    s = inproc(repo, "status", "--json", check=True)
    assert '"state": "complete"' in s.stdout
