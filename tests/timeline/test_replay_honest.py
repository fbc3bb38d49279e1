"""Replay is honest (issue 32): the runs of tests/timeline/scenarios.py (a team edited while the
daemon ran, `.autodev/` files committed, a notice answered while a gate was open, a nanosecond
clock, a fork) replay `identical`, and each one changed replays `diverged` where it was changed.
Commit ids are compared by their mapping, recorded to replayed; no other text is masked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from autodev.records import ToolFinished, ToolStarted
from autodev.replay import replay as rp
from autodev.store.paths import RunPaths
from tests.conftest import git, thread_of
from tests.timeline import typed
from tests.timeline.conftest import copy_run
from tests.timeline.scenarios import EDITED_LANE, LANE


def recording(run: tuple[Path, Path, Path], monkeypatch) -> rp.Recording:
    repo, home, _ = run
    monkeypatch.setenv("AUTODEV_HOME", str(home))
    return rp.from_run(RunPaths(repo))


def test_the_run_replays_identical_with_recorded_tools(scenario, monkeypatch):
    """A team edit (turn 3 onwards runs with the edited team, turns 1 and 2 with the first), a
    commit of `.autodev/` files (credited in the replay too), a notice answered while the gate
    was open and then the gate approved (the builder is scheduled by gate_decision), and a
    notice's mid-turn HEAD (the repository takes it before the notice)."""
    assert rp.run(recording(scenario, monkeypatch), recorded_tools=True) is None


def test_with_real_tools_only_the_clock_diverges(scenario, monkeypatch):
    """The tools run again: every turn is identical up to `date +%s%N`, whose output differs and
    is not masked (a 7-to-40-digit run was taken for a commit id)."""
    rec = recording(scenario, monkeypatch)
    ran = next(h for h in rec.harness if isinstance(h, ToolStarted) and "date +%s%N" in json.dumps(h.args))
    recorded = next(h.result for h in rec.harness if isinstance(h, ToolFinished) and h.call_id == ran.call_id)
    d = rp.run(rec)
    assert d is not None and (d.turn, d.step) == (5, "tool result 1"), str(d)
    assert recorded.split("output:\n")[1].strip() in d.expected and "<sha>" not in d.expected + d.got


def test_a_fork_replays_identical_from_its_post(scenario_fork, monkeypatch):
    """A fork's replay starts from the fork's thread and commit (post 1, then the user's
    message), not from the original run's start: its turn 1 saw 2 posts."""
    rec = recording(scenario_fork, monkeypatch)
    assert rec.forked_at == 1
    assert rp.run(rec) is None


def test_the_team_history_is_the_team_in_force_at_each_turn(scenario, monkeypatch, tmp_path):
    rec = recording(scenario, monkeypatch)
    teams = rp.Teams(rec, tmp_path)
    assert rec.run_dir is not None
    assert {t: teams.per_turn[t] for t in (1, 2, 3, 6)} == {1: 1, 2: 1, 3: 2, 6: 2}
    assert f'"{LANE}"' in (teams.versions[1] / "team.toml").read_text()
    assert EDITED_LANE in (teams.versions[2] / "team.toml").read_text()


@pytest.mark.parametrize(
    "change, where",
    [
        ("team", (3, "turn prompt")),  # the edited team, changed: the first turn it ran
        ("answer", (5, "turn prompt")),  # the notice's answer reaches the builder after the gate
        ("credit", (1, "credit")),  # the `.autodev/` files left out of the recorded credit
    ],
)
def test_each_change_diverges_where_it_was_made(scenario, monkeypatch, tmp_path, change, where):
    repo, home, run_dir = scenario
    rec = recording(scenario, monkeypatch)
    if change == "team":
        shutil.copytree(run_dir / "team-history", tmp_path / "run" / "team-history")
        team = tmp_path / "run" / "team-history" / "2" / "team.toml"
        team.write_text(team.read_text().replace(EDITED_LANE, "Reviews nothing"))
        rec.run_dir = tmp_path / "run"
    elif change == "answer":
        i = next(i for i, p in enumerate(rec.posts) if p.notice and p.notice.answered)
        rec.posts[i] = rec.posts[i].but(text=rec.posts[i].text + " please")
    else:
        i = next(i for i, p in enumerate(rec.posts) if p.credit and p.credit.dump())
        credit = rec.posts[i].credit
        assert credit is not None
        files = [f for f in credit.files if not f.startswith(".autodev/")]
        rec.posts[i] = rec.posts[i].but(credit=credit.but(files=files))
    d = rp.run(rec, recorded_tools=True)
    assert d is not None and (d.turn, d.step) == where, str(d)


def test_a_changed_fork_diverges_at_its_own_turn(scenario_fork, monkeypatch):
    rec = recording(scenario_fork, monkeypatch)
    i = next(i for i, p in enumerate(rec.posts) if p.text == "c added")
    rec.posts[i] = rec.posts[i].but(text="c changed")
    d = rp.run(rec, recorded_tools=True)
    assert d is not None and (d.turn, d.step) == (1, "post"), str(d)


@pytest.mark.full
def test_the_exported_run_replays_identical(scenario, tmp_path, autodev, monkeypatch):
    """The bundle keeps the team history: the gate, the notice and the team edit replay from it."""
    repo, home, _ = scenario
    out = tmp_path / "run.tar.gz"
    r = autodev(repo, "runs", "export", "--out", str(out), env={"AUTODEV_HOME": str(home)})
    assert r.returncode == 0, r.stdout + r.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = autodev(
        elsewhere, "replay", str(out), "--tools", "recorded", env={"AUTODEV_HOME": str(tmp_path / "h")}
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("identical")


def test_rewind_to_a_mid_turn_notice_goes_to_the_head_it_was_raised_on(scenario, tmp_path):
    """Post 6 is the builder's notice, raised after it committed b.txt in turn 4: the rewind puts
    the branch at that commit, not at the one turn 4 started on."""
    from autodev.timeline import rewind as rw

    repo, _home, run_dir = scenario
    copy = copy_run((repo, run_dir), tmp_path / "repo")
    posts = thread_of(copy)
    notice = posts[5]
    assert notice.get("notice") and notice["head"] != posts[2]["head"]
    assert git(copy, "show", "--name-only", "--format=", notice["head"]).split() == ["b.txt"]
    rw.request(RunPaths(copy), 6)
    assert git(copy, "rev-parse", "HEAD").strip() == notice["head"]
    assert (copy / "b.txt").exists()


def test_init_keeps_autodev_out_of_git(tmp_path, inproc):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / ".git" / "info" / "exclude").write_text("*.log")  # the user's, kept; no newline at its end
    assert inproc(repo, "init").returncode == 0
    assert git(repo, "status", "--porcelain", "--untracked-files=all").strip() == ""
    assert (repo / ".git" / "info" / "exclude").read_text() == "*.log\n.autodev/\n"
    assert inproc(repo, "init", "--force").returncode == 0
    assert (repo / ".git" / "info" / "exclude").read_text().count(".autodev") == 1


# -- the comparison itself (no daemon) ----------------------------------------------------------


def _rec(result: str, head: str, commits: list[str]):
    """One turn: a run_command result, then a work_done crediting `commits` at `head`."""
    from autodev.replay.recording import Recording

    harness = typed.harness(
        {
            "type": "turn_started",
            "turn": 1,
            "head": "b" * 40,
            "messages": [{"role": "user", "content": "go"}],
        },
        {"type": "tool_started", "turn": 1, "call_id": "c1", "name": "run_command"},
        {"type": "tool_finished", "turn": 1, "call_id": "c1", "result": result},
    )
    post = {
        "seq": 2,
        "from": "builder",
        "kind": "work_done",
        "text": "made it",
        "turn": 1,
        "head": head,
        "credit": {"commits": commits, "files": ["a.txt"]},
    }
    events = typed.events({"type": "scheduled", "turn": 1, "participant": "builder", "rule": "r"})
    posts = typed.posts({"seq": 1, "from": "user", "kind": "say", "text": "x"}, post)
    return Recording(posts, events, harness, Path(), "", Path())


def test_commit_ids_are_compared_by_their_mapping_and_nothing_else_is_masked():
    from autodev.replay.compare import compare

    a1, b1 = "1" * 40, "2" * 40  # the recorded commit, the replayed one
    same = compare(_rec(f"[main {a1[:7]}] a", a1, [a1]), _rec(f"[main {b1[:7]}] a", b1, [b1]), paths=[])
    assert same is None
    for x, y in [
        ("1712345678123456789", "1712345678987654321"),  # a clock's nanoseconds
        ("sha256 deadbeefcafe", "sha256 deadbeefcafd"),  # a hash in a test's output
        ("id 550e8400-e29b-41d4", "id 550e8400-e29b-41d5"),  # a UUID's parts
        (f"see {'3' * 12}", f"see {'4' * 12}"),  # hex that is no commit of the run
    ]:
        d = compare(_rec(x, a1, [a1]), _rec(y, b1, [b1]), paths=[])
        assert d is not None and (d.turn, d.step) == (1, "tool result 1"), (x, d)


def test_a_commit_paired_twice_diverges():
    """The post names, as its HEAD, a commit other than the one it credited in the replay."""
    from autodev.replay.compare import compare

    a1, b1, b2 = "1" * 40, "2" * 40, "5" * 40
    d = compare(_rec("ok", a1, [a1]), _rec("ok", b2, [b1]), paths=[])
    assert d is not None and d.turn == 1 and d.step.startswith("commit id"), str(d)
