"""Issue 29's reproductions that the other files of this suite did not run as an attacker would,
run again on the final code: finding 10 as a real eval whose tasks file and output live outside
/tmp and $HOME, and finding 11's second half, a bundle whose config would let replayed commands
read a host folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.eval.smoke import grade_flags
from tests.security.test_eval import BOX, results, task_repo, team, write_tasks
from tests.security.test_replay import _edit_toml, _first_command, crafted, exported  # noqa: F401
from tests.security.test_sandbox_view import outside  # noqa: F401 - a folder outside /tmp and $HOME
from tests.timeline.conftest import recorded_run  # noqa: F401 - the session's recorded run

HIDDEN = "def test_hidden(): assert solve() == 42  # the grader's hidden test"


@pytest.mark.skipif(not BOX.active, reason=f"no working bubblewrap here: {BOX.problem}")
@pytest.mark.timeout(600)
def test_finding10_an_eval_under_srv_hides_its_tasks_and_results_from_the_team_and_the_grade(
    outside,  # noqa: F811
    autodev,
):
    """The team's command and the grading both try to read the tasks file (every task's hidden
    tests) and the eval's output folder; with the whole file system mounted read-only, both could."""
    tasks, out = outside / "tasks.jsonl", outside / "out"
    source = task_repo(outside / "src", {})
    peek = f"cat {tasks} > seen.txt 2>&1; ls {out} >> seen.txt 2>&1; ls {out}/runs >> seen.txt 2>&1; true"
    builder = team(outside / "teams", "peek", [{"tool": "run_command", "args": {"command": peek}}])
    write_tasks(
        tasks,
        [{"id": "peek", "repo": str(source), "base_commit": "base", "problem_statement": HIDDEN,
          "test_patch": "", "test_command": f"! cat {tasks} && ! ls {out}/results.jsonl"}],
    )  # fmt: skip
    # the smoke suite's config turns the team's sandbox off; here it is on, as by default
    (outside / "config.toml").write_text('sandbox = "bwrap"\nwaitFirstSec = 0.1\nwaitCapSec = 0.2\n')
    r = autodev(
        outside, "eval", str(tasks), "--team", str(builder), "--out", str(out),
        "--config", str(outside / "config.toml"), *grade_flags(), timeout=400,
    )  # fmt: skip
    x = results(out)["peek"]
    assert x["error"] is None, r.stdout + r.stderr
    seen = (Path(x["folder"]) / "repo" / "seen.txt").read_text()
    assert "hidden test" not in seen and "No such file or directory" in seen, seen
    assert "results.jsonl" not in seen and "summary.json" not in seen, seen
    assert x["resolved"] is True, (Path(x["folder"]) / "grade.log").read_text()


def test_finding11_a_bundle_cannot_let_replayed_commands_read_a_host_folder(
    exported,  # noqa: F811
    tmp_path,
    autodev,
):
    """sandboxRead and sandboxExpose in the bundle's config name a host folder holding a key: the
    replayed command that prints it prints nothing of it, anywhere the replay writes."""
    private = tmp_path / "private"  # under /tmp: the room's /tmp is its own
    private.mkdir()
    key = "replay-29-host-file-9f2Kq7"
    (private / "notes.txt").write_text(f"{key}\n")

    def edit(root: Path) -> None:
        _first_command(root, f"cat {private}/notes.txt")
        _edit_toml(
            root / "config/config.toml", lambda c: c.update(sandboxRead=[str(private)], sandboxExpose=["/"])
        )

    bad = crafted(exported, tmp_path / "bad.tar.gz", edit)
    home = tmp_path / "h"
    r = autodev(tmp_path, "replay", str(bad), env={"AUTODEV_HOME": str(home)}, timeout=180)
    assert r.returncode == 1, r.stdout + r.stderr  # the command's result differs from the recording
    assert key not in r.stdout + r.stderr
    written = [p for p in home.rglob("*") if p.is_file() and key in p.read_text(errors="replace")]
    assert written == [], written


def test_a_task_repo_given_as_an_ext_url_runs_nothing_even_where_the_users_git_allows_ext(
    tmp_path, monkeypatch
):
    """The eval's clone runs the user's git as it is (their transports and credentials): a task
    file's `"repo": "ext::sh -c ..."` would run on the host where their config allows `ext`."""
    from autodev.eval.workspace import WorkspaceError, clone

    mark = tmp_path / "ext-ran"
    config = tmp_path / "gitconfig"
    config.write_text('[protocol "ext"]\n\tallow = always\n')
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    with pytest.raises(WorkspaceError, match="transport 'ext' not allowed"):
        clone(f"ext::sh -c touch% {mark}", "base", tmp_path / "clone")
    assert not mark.exists()
