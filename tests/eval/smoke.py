"""The smoke suite built for a test, and scripted teams that solve some of its tasks and fail
others: each team's builder applies whichever of its solution diffs fit the repository it is in
(a diff for another project's files does not apply), commits, and declares done; its audit accepts
or reopens as the team's script says (reopened, the builder asks the user, and the run halts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "evals" / "build_smoke.py"

# What `make test` runs of the suite; AUTODEV_EVAL_FULL=1 runs every task (`make eval-smoke`).
SUBSET = ["wordcount-spaces", "intervals-merge", "roman-parse", "semver-compare"]


def full() -> bool:
    return os.environ.get("AUTODEV_EVAL_FULL") == "1"


def smoke_tasks(tasks_file: Path) -> list:
    from autodev.eval.tasks import load_tasks

    tasks = load_tasks(tasks_file)
    return tasks if full() else [t for t in tasks if t.id in SUBSET]


# No sandbox (the solutions sit in the test's /tmp, which the sandbox hides), prompt waits short.
CONFIG = 'sandbox = "off"\nwaitFirstSec = 0.1\nwaitCapSec = 0.2\n'


def grade_flags() -> list[str]:
    """Setup and grading run in bubblewrap; on a machine without it, the eval is told to grade
    unsandboxed (tests/security/test_eval.py checks the refusal itself)."""
    from autodev.guard.sandbox import resolve

    return [] if resolve("auto").active else ["--grade-unsandboxed"]


TEAM = """
[[participants]]
name = "builder"
model = "scripted"
write = true

[audit]
model = "scripted"

[scripted]
path = "{script}"
"""

# A stated price, so every run has a cost.
PRICE = "[price]\ninput_per_token = 0.000001\noutput_per_token = 0.000002\n"


def build_suite(root: Path) -> tuple[Path, Path]:
    """The shipped suite built under root: (tasks file, reference fixes folder)."""
    tasks = root / "smoke.jsonl"
    subprocess.run(
        [sys.executable, str(BUILD), "--repos", str(root / "smoke-repos"), "--tasks", str(tasks),
         "--solutions", str(root / "solutions")],
        check=True, capture_output=True,
    )  # fmt: skip
    return tasks, root / "solutions"


def subset(tasks: Path, ids: list[str], dest: Path) -> Path:
    """A tasks file of only `ids`, beside the original (its relative repo paths still hold)."""
    lines = [line for line in tasks.read_text().splitlines() if json.loads(line)["id"] in ids]
    dest.write_text("".join(line + "\n" for line in lines))
    return dest


def scripted_team(folder: Path, name: str, diffs: dict[str, str], audit_accepts: bool) -> Path:
    """A team file `name`.toml whose builder applies `diffs` (task id → diff text) where they fit."""
    sol = folder / f"{name}-solutions"
    sol.mkdir(parents=True)
    for task, diff in diffs.items():
        (sol / f"{task}.diff").write_text(diff)
    apply = (
        f'for p in {sol}/*.diff; do git apply --check "$p" 2>/dev/null && git apply "$p"; done; '
        "git add -A && git commit -qm fix || true"
    )
    script = (
        PRICE
        + f"""
[[step]]
participant = "builder"
calls = [{{ tool = "run_command", args = {{ command = {json.dumps(apply)} }} }}]
[[step]]
participant = "builder"
calls = [{{ tool = "post", args = {{ kind = "work_done", text = "fixed" }} }}]
[[step]]
participant = "builder"
calls = [{{ tool = "post", args = {{ kind = "done", text = "the task is done" }} }}]
[[step]]
participant = "builder"
calls = [{{ tool = "post", args = {{ kind = "say", text = "The audit disagrees: what now?", handoff = "user" }} }}]
[[step]]
participant = "audit"
calls = [{{ tool = "verdict", args = {{ accept = {str(audit_accepts).lower()}, gap = "checked" }} }}]
"""
    )
    (folder / f"{name}.script.toml").write_text(script)
    team = folder / f"{name}.toml"
    team.write_text(TEAM.format(script=f"{name}.script.toml"))
    return team
