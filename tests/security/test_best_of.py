"""A best-of group's runs cannot reach the user's repository or each other (issue 34): each run
works in a clone of its own, so a run that moves every branch its git can see moves only its
own, and does not even see the user's repository. With `git worktree`s (the first design), the
shared `.git` was writable in every run's sandbox: run 1 moved the user's `main` and run 2's
branch, so run 2's kept work became run 1's commit."""

from __future__ import annotations

import json

import pytest

from autodev.guard import sandbox
from tests.conftest import git, write_team
from tests.e2e.helpers import ACCEPT, BUILDER, call, step, wait_for

pytestmark = pytest.mark.skipif(not sandbox.resolve("auto").active, reason="needs a working bubblewrap")


def test_a_run_moving_every_branch_it_sees_moves_only_its_own(repo, autodev):
    evil = (
        "c=$(git commit-tree HEAD^{tree} -p HEAD -m evil); "
        'for r in $(git for-each-ref --format=\'%(refname)\' refs/heads); do git update-ref "$r" "$c"; done; '
        f"if [ -e {repo}/.git ]; then echo visible; else echo hidden; fi > seen.txt"
    )
    script = (
        step("builder", call("run_command", command=evil)).replace("[[step]]", "[[step]]\nruns = [1]", 1)
        + step("builder", call("write_file", path="fix.txt", content="run 2's own work\n")).replace(
            "[[step]]", "[[step]]\nruns = [2]", 1
        )
        + step("builder", call("post", kind="done", text="done"))
        + ACCEPT
    )
    # the guard off: the sandbox alone must hold a run the user let run any git command
    write_team(repo, BUILDER, script, 'sandbox = "bwrap"\ngateRequired = []\n')
    main = git(repo, "rev-parse", "main").strip()
    r = autodev(repo, "start", "--best-of", "2", "go", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    gid = r.stdout.split()[1].rstrip(":")
    from autodev.group.record import find

    def ended():
        g = find(repo, gid)
        for m in g.members.values():
            from autodev.store.lock import DaemonLock

            if (pid := DaemonLock.holder(m.paths.lock)) and pid > 0:  # -1: its pid not written yet
                autodev.adopt(pid)
        return g.ended

    wait_for("the group to end", ended, 90, step_sec=0.5)
    assert git(repo, "rev-parse", "main").strip() == main  # the user's branch did not move
    assert git(repo, "for-each-ref", "--format=%(refname)", "refs/heads").split() == ["refs/heads/main"]
    assert git(repo, "show", f"refs/autodev/best-of/{gid}/1:seen.txt") == "hidden\n"
    assert git(repo, "show", f"refs/autodev/best-of/{gid}/2:fix.txt") == "run 2's own work\n"
    assert "evil" not in git(repo, "log", "--format=%s", f"refs/autodev/best-of/{gid}/2")
    status = json.loads(autodev(repo, "status", "--json", check=True).stdout)
    assert [x["state"] for x in status["group"]["runs"]] == ["complete", "complete"]
