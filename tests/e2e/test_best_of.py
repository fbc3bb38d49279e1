"""Best of N as a user meets it (issue 34, SPEC §23): a real repository with pytest and a bug, a
scripted team whose three runs differ (`--vary team=...`: run 1 fixes add and breaks mul, run 2
fixes add, run 3 changes nothing that matters), three real daemons in three worktrees, the tests
in the sandbox. `autodev pick` names run 2 and says why; `--apply` puts it on the user's branch.

pytest inside the sandbox: the system's python3 here has no pytest, so testCommand is this
checkout's venv python, made visible with `sandboxExpose`."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from autodev.guard import sandbox
from tests.conftest import git, write_team
from tests.e2e.helpers import ACCEPT, BUILDER, call, start_detached, step, wait_for

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
WRONG = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n"  # add fixed, mul broken
RIGHT = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
TESTS = (
    "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_mul():\n    assert mul(2, 3) == 6\n"
)
COMMAND = f"{sys.executable} -m pytest -q"
WIDE = {"COLUMNS": "240"}

needs_bwrap = pytest.mark.skipif(not sandbox.resolve("auto").active, reason="needs a working bubblewrap")


def writes(path: str, content: str, delay_sec: float = 0) -> str:
    return (
        step(
            "builder",
            call("write_file", path=path, content=content),
            call("post", kind="done", text=f"wrote {path}"),
            delay_sec=delay_sec,
        )
        + ACCEPT
    )


def project(repo: Path, delay_sec: float = 0) -> list[str]:
    """The buggy calc, its tests, and three team variants (their scripts in .autodev/).
    `delay_sec` slows run 1's answer only: the one a test must catch going."""
    (repo / "calc.py").write_text(CALC)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_calc.py").write_text(TESTS)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "calc with a bug in add")
    expose = json.dumps(sorted({sys.prefix, sys.base_prefix}))
    config = f'testCommand = "{COMMAND}"\nsandboxExpose = {expose}\n'
    write_team(repo, BUILDER, writes("calc.py", RIGHT), config)
    scripts = [
        writes("calc.py", WRONG, delay_sec),
        writes("calc.py", RIGHT),
        writes("NOTES.md", "looked at it\n"),
    ]
    vary = []
    for i, script in enumerate(scripts, start=1):
        (repo / ".autodev" / f"script-{i}.toml").write_text(script)
        team = BUILDER.replace('path = "script.toml"', f'path = "script-{i}.toml"')
        (repo / ".autodev" / f"team-{i}.toml").write_text(team)
        vary.append(f".autodev/team-{i}.toml")
    return ["--vary", "team=" + ",".join(vary)]


def group_of(autodev, repo: Path) -> dict:
    return json.loads(autodev(repo, "status", "--json", check=True).stdout)["group"]


def start_group(autodev, repo: Path, *args: str) -> str:
    r = autodev(repo, "start", *args, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.split()[1].rstrip(":")  # "group <id>: ..."


def adopt_all(autodev, repo: Path) -> None:
    """Every daemon and driver of the repository's groups: killed at teardown whatever happens."""
    from autodev.group.record import of_repo
    from autodev.store.lock import DaemonLock

    for g in of_repo(repo):
        if g.lock.exists() and g.lock.read_text().strip().isdigit() and g.driver_alive():
            autodev.adopt(int(g.lock.read_text()))
        for m in g.members.values():
            pid = DaemonLock.holder(m.paths.lock)
            if pid and pid > 0:  # -1: held, its pid not written yet (a later pass adopts it)
                autodev.adopt(pid)


def ended(autodev, repo: Path, timeout: float = 90) -> dict:
    """`status --json`'s group once every group of the repository has ended (read from the
    groups' records while waiting: a `status` process each half second costs CPU the runs need)."""
    from autodev.group.record import of_repo

    def check():
        adopt_all(autodev, repo)
        groups = of_repo(repo)
        return bool(groups) and all(g.ended for g in groups)

    wait_for("the group's runs to end", check, timeout, step_sec=0.25)
    g = group_of(autodev, repo)
    assert g["ended"], g
    return g


@needs_bwrap
def test_best_of_three_picks_the_fix_that_breaks_nothing_and_applies_it(repo, autodev):
    vary = project(repo)
    gid = start_group(autodev, repo, "--best-of", "3", *vary, "fix the failing test")
    g = ended(autodev, repo)
    assert g["id"] == gid and g["n"] == 3 and not g["driver"]
    runs = {r["k"]: r for r in g["runs"]}
    assert {k: r["state"] for k, r in runs.items()} == {1: "complete", 2: "complete", 3: "complete"}
    assert runs[1]["evidence"] == "✘ 1 broke: tests/test_calc.py::test_mul"
    assert runs[2]["evidence"] == "✔ 1 now pass, 0 broke"
    assert (runs[2]["fail_to_pass"], runs[2]["pass_to_fail"]) == (1, 0)
    assert all(r["audit"] == "accepted" and r["turns"] == 1 for r in runs.values())
    # each run is a run of its own: worktree, branch, run folder, id in the runs index
    trees = {Path(r["worktree"]) for r in runs.values()}
    assert len(trees) == 3 and repo not in trees and all(t.is_dir() for t in trees)
    assert len({r["run"] for r in runs.values()}) == 3
    listed = json.loads(autodev(repo, "runs", "--json", check=True).stdout)
    assert {Path(row["repo"]) for row in listed} >= trees
    for t in trees:  # `status` in a run's worktree is that run's
        assert json.loads(autodev(t, "status", "--json", check=True).stdout)["state"] == "complete"
    shown = " ".join(autodev(repo, "status", check=True, env=WIDE).stdout.split())
    assert f"best-of group {gid}: 3 runs" in shown and "✔ 1 now pass, 0 broke" in shown
    # replay takes a group run by its id, from anywhere
    replayed = autodev(repo, "replay", runs[2]["run"], timeout=120)
    assert replayed.returncode == 0 and "identical" in replayed.stdout, replayed.stdout + replayed.stderr

    picked = json.loads(autodev(repo, "pick", "--json", check=True).stdout)
    assert picked["winner"] == 2 and picked["order"] == [2, 3, 1]
    assert picked["reason"] == (
        "run 2 wins on rule 2 (most fail_to_pass): 1 now pass against 0 now pass for run 3"
    )
    text = " ".join(autodev(repo, "pick", check=True, env=WIDE).stdout.split())
    assert f"pick: run 2 (refs/autodev/best-of/{gid}/2)" in text and "why: run 2 wins on rule 2" in text

    head_before = git(repo, "rev-parse", "HEAD").strip()
    r = autodev(repo, "pick", "--apply", check=True)
    assert f"run 2 applied to main (fast-forward); its work stays on refs/autodev/best-of/{gid}/2" in r.stdout
    assert (repo / "calc.py").read_text() == RIGHT
    assert (
        git(repo, "rev-parse", "HEAD").strip()
        == git(repo, "rev-parse", f"refs/autodev/best-of/{gid}/2").strip()
    )
    assert git(repo, "merge-base", "--is-ancestor", head_before, "HEAD") == ""
    assert not (repo / "NOTES.md").exists()
    assert git(repo, "status", "--porcelain").strip() == ""
    # the other runs stay on their refs, with their work
    assert "return a + b" in git(repo, "show", f"refs/autodev/best-of/{gid}/1:calc.py").split("def mul")[1]
    assert git(repo, "show", f"refs/autodev/best-of/{gid}/3:NOTES.md") == "looked at it\n"
    assert group_of(autodev, repo)["applied"]["k"] == 2


@needs_bwrap
def test_a_driver_killed_with_9_loses_nothing_and_the_group_resumes_and_a_conflicting_apply_is_refused(
    repo, autodev
):
    """The group's driver killed mid-run, resumed, every run done once; then the user's own
    commit on the branch makes the winner's apply conflict: refused by name, the branch left as
    it was (one group for both: each group's daemons pay litellm's import, issue 33)."""
    vary = project(repo, delay_sec=1.5)
    gid = start_group(autodev, repo, "--best-of", "2", "--parallel", "1", *vary, "fix the failing test")
    from autodev.group.record import find

    g = find(repo, gid)
    pid = int(wait_for("the driver's pid", lambda: g.lock.exists() and g.lock.read_text().strip(), 10))
    autodev.adopt(pid)
    wait_for(
        "run 1 to start", lambda: find(repo, gid).members.get(1) and find(repo, gid).members[1].started, 30
    )
    os.killpg(pid, signal.SIGKILL)
    wait_for("the driver to be gone", lambda: not find(repo, gid).driver_alive(), 10)
    shown = " ".join(autodev(repo, "status", check=True, env=WIDE).stdout.split())
    assert f"its driver is not running: continue it with `autodev start --resume-group {gid}`" in shown

    r = autodev(repo, "start", "--resume-group", gid, check=True)
    assert f"group {gid}: driver started again" in r.stdout
    out = ended(autodev, repo)
    assert [r["state"] for r in out["runs"]] == ["complete"] * 2
    for k in (1, 2):  # each run did its work exactly once
        thread = Path(find(repo, gid).members[k].paths.thread).read_text().splitlines()
        assert [json.loads(p)["kind"] for p in thread].count("done") == 1
    log = [json.loads(line) for line in (g.folder / "group.jsonl").read_text().splitlines()]
    assert sorted(e["k"] for e in log if e["type"] == "started") == [1, 2]
    assert json.loads(autodev(repo, "pick", "--json", check=True).stdout)["winner"] == 2

    (repo / "calc.py").write_text(CALC.replace("a - b", "b + a"))
    git(repo, "commit", "-qam", "the user's own fix")
    head = git(repo, "rev-parse", "HEAD").strip()
    r = autodev(repo, "pick", "--apply")
    assert r.returncode == 2
    assert "run 2 does not merge cleanly into main: conflicts in calc.py; the branch is as it was" in r.stderr
    assert "fix: merge it by hand" in r.stderr
    assert git(repo, "rev-parse", "HEAD").strip() == head and git(repo, "status", "--porcelain").strip() == ""


def test_a_group_where_a_run_is_going_is_refused_with_the_fix(repo, autodev):
    question = step("builder", call("post", kind="say", text="which one?", handoff="user"))
    write_team(repo, BUILDER, question + step("builder", call("post", kind="done", text="ok")) + ACCEPT)
    start_detached(autodev, repo, "ask me")
    wait_for(
        "the run to wait for the user",
        lambda: json.loads(autodev(repo, "status", "--json").stdout)["state"] == "awaiting_user",
        30,
    )
    r = autodev(repo, "start", "--best-of", "2", "something")
    assert r.returncode == 2
    assert "a run is already going in this repository" in r.stderr
    assert "fix: wait for it (`autodev status`) or end it with `autodev stop`" in r.stderr
    from autodev.group.record import of_repo

    assert of_repo(repo) == []


def test_two_groups_on_one_repository_do_not_collide_and_worktrees_go_only_with_an_explicit_prune(
    repo, autodev
):
    write_team(repo, BUILDER, writes("a.txt", "a\n"))
    first = start_group(autodev, repo, "--best-of", "2", "one")
    second = start_group(autodev, repo, "--best-of", "2", "two")
    assert first != second
    from autodev.group.record import find

    def both_ended():
        adopt_all(autodev, repo)
        return find(repo, first).ended and find(repo, second).ended

    wait_for("both groups to end", both_ended, 90, step_sec=0.5)
    trees = {m.worktree for gid in (first, second) for m in find(repo, gid).members.values()}
    assert len(trees) == 4
    for gid in (first, second):
        for k in (1, 2):
            assert git(repo, "show", f"refs/autodev/best-of/{gid}/{k}:a.txt") == "a\n"
        picked = json.loads(autodev(repo, "pick", "--group", gid, "--json", check=True).stdout)
        assert picked["group"] == gid and picked["winner"] == 1
    # send --all goes to the newest group's runs (queued: their daemons have ended)
    r = autodev(repo, "send", "--all", "one more thing", check=True)
    assert r.stdout.count("sent (") == 2
    for m in find(repo, second).members.values():
        assert list(m.paths.inbox.iterdir())
    assert not any(list(m.paths.inbox.iterdir()) for m in find(repo, first).members.values())
    _worktrees_listed_and_go_only_with_an_explicit_prune(autodev, repo, first)
    assert all(m.worktree.is_dir() for m in find(repo, second).members.values())  # the other group's stay


def _worktrees_listed_and_go_only_with_an_explicit_prune(autodev, repo: Path, gid: str) -> None:
    """An ended group's worktrees: listed by `runs`, each run reached by its id (status, send,
    rewind), kept by an age prune, removed by `runs prune --group` with the work kept on refs.
    Part of the test above: a group of its own would pay two more daemons' litellm imports."""
    from autodev.group.record import find

    g = find(repo, gid)
    trees = [m.worktree for m in g.members.values()]
    listed = " ".join(autodev(repo, "runs", check=True, env=WIDE).stdout.split())
    assert f"{gid} {repo} 2 runs, ended" in listed
    # each run by its id, from the repository the group started from
    run2 = g.members[2]
    rid = json.loads(autodev(repo, "status", "--json", "--run", _run_id(run2), check=True).stdout)["run_id"]
    assert rid == _run_id(run2)
    r = autodev(repo, "send", "--run", rid, "hello run 2", check=True)
    assert "sent (" in r.stdout and [p.name for p in run2.paths.inbox.iterdir()]
    assert not list(g.members[1].paths.inbox.iterdir())
    r = autodev(repo, "rewind", "1", "--run", rid, check=True)
    assert "rewound to post 1" in r.stdout
    assert autodev(repo, "status", "--run", "nosuch").returncode == 2
    # an age prune leaves a group's runs alone unless the group is older than the age
    autodev(repo, "runs", "prune", "--older-than", "30d", check=True)
    assert all(t.is_dir() for t in trees) and all(m.paths.run_dir.is_dir() for m in g.members.values())
    r = autodev(repo, "runs", "prune", "--group", gid, check=True)
    assert f"removed group {gid}'s worktrees" in r.stdout
    assert not any(t.exists() for t in trees) and not any(
        m.paths.run_dir.exists() for m in g.members.values()
    )
    assert git(repo, "worktree", "list").count("\n") == 1  # clones: the repository has no worktrees
    for k in (1, 2):  # the work stays on the refs
        assert git(repo, "show", f"refs/autodev/best-of/{gid}/{k}:a.txt") == "a\n"
    assert gid not in autodev(repo, "runs", check=True, env=WIDE).stdout
    # pick still ranks from the kept record
    assert json.loads(autodev(repo, "pick", "--group", gid, "--json", check=True).stdout)["group"] == gid


def test_the_group_cost_cap_counts_every_run_and_stops_the_group(repo, autodev):
    """--group-max-cost-usd: once the runs together spent it, no further run starts and the
    going ones are stopped; status says so, and the pick ranks what ended."""
    price = "[price]\ninput_per_token = 0.001\noutput_per_token = 0.002\n"
    write_team(repo, BUILDER, price + writes("a.txt", "a\n"))
    gid = start_group(
        autodev, repo, "--best-of", "3", "--parallel", "1", "--group-max-cost-usd", "0.0001", "go"
    )
    g = ended(autodev, repo)
    assert g["id"] == gid and g["budget_reached"] and g["max_cost_usd"] == 0.0001
    assert [r["state"] for r in g["runs"]] == ["complete", "skipped", "skipped"]
    assert g["spent"] >= 0.0001 and g["runs"][0]["cost"] == g["spent"]
    shown = " ".join(autodev(repo, "status", check=True, env=WIDE).stdout.split())
    assert "of $0.00 (group cap)" in shown and "the group's cost cap was reached" in shown
    picked = json.loads(autodev(repo, "pick", "--json", check=True).stdout)
    assert picked["order"] == [1] and picked["reason"] == "run 1 is the only run that ended"


def test_the_group_cost_cap_stops_runs_that_are_going(repo, autodev):
    """Both runs at once: after their first turns the group is over its cap, and the driver stops
    them mid-way (the second turn's slow request is cut); neither reaches done."""
    price = "[price]\ninput_per_token = 0.001\noutput_per_token = 0.002\n"
    script = (
        price
        + step("builder", call("post", kind="say", text="thinking"))
        + step("builder", call("post", kind="done", text="done"), delay_sec=20)
        + ACCEPT
    )
    write_team(repo, BUILDER, script)
    start_group(autodev, repo, "--best-of", "2", "--group-max-cost-usd", "0.0001", "go")
    g = ended(autodev, repo, timeout=60)
    assert g["budget_reached"]
    assert [r["state"] for r in g["runs"]] == ["stopped", "stopped"]
    from autodev.group.record import find

    for m in find(repo, g["id"]).members.values():
        kinds = [json.loads(p)["kind"] for p in m.paths.thread.read_text().splitlines()]
        assert "done" not in kinds


def _run_id(m) -> str:
    return json.loads(m.paths.state.read_text())["run_id"]
