"""A recorded run to rewind, fork and replay: a builder that went wrong at post 4.

Posts: 1 user objective, 2 builder work_done (a.txt), 3 reviewer asks for b.txt, 4 builder
work_done with a broken b.txt (and junk left uncommitted), 5 reviewer asks the user. Rewound to
3, the builder's next steps write a good c.txt, the reviewer says done and the audit accepts.
"""

from __future__ import annotations

TEAM = """
[[participants]]
name = "builder"
model = "scripted"
write = true

[[participants]]
name = "reviewer"
model = "scripted"
write = false

[audit]
model = "scripted"

[scripted]
path = "script.toml"
"""

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
calls = [{ tool = "post", args = { kind = "say", text = "now add b.txt", handoff = "builder" } }]
[[step]]
participant = "builder"
calls = [
  { tool = "write_file", args = { path = "b.txt", content = "broken\\n" } },
  { tool = "run_command", args = { command = "git add -A && git commit -qm b-broken && echo junk > junk.txt" } },
]
[[step]]
participant = "builder"
calls = [{ tool = "post", args = { kind = "work_done", text = "b added (broken)", handoff = "reviewer" } }]
[[step]]
participant = "reviewer"
calls = [{ tool = "post", args = { kind = "say", text = "b.txt is broken; what now?", handoff = "user" } }]
[[step]]
participant = "builder"
calls = [
  { tool = "write_file", args = { path = "c.txt", content = "good\\n" } },
  { tool = "run_command", args = { command = "git add -A && git commit -qm c-good" } },
]
[[step]]
participant = "builder"
calls = [{ tool = "post", args = { kind = "work_done", text = "c added", handoff = "reviewer" } }]
[[step]]
participant = "reviewer"
calls = [{ tool = "post", args = { kind = "done", text = "a and c are right" } }]
[[step]]
participant = "audit"
calls = [{ tool = "verdict", args = { accept = true, gap = "" } }]
"""
