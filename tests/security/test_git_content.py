"""Issue 29, findings 8, 13 and 14: the repository's `.git` stays git's.

A participant's command in the real sandbox plants what the user's own git would run or follow;
after the run the user's plain `git status` (run here as a user would, with a clean
environment) runs nothing, and the thread names what was moved to the quarantine folder. A
branch written backwards is named with the commits it dropped, and put back while history
rewriting is gated. Hostile git content (a `.gitmodules` git cannot parse, a corrupt index, odd
refs) never ends the daemon: the run goes on, or pauses naming git's message."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from autodev.guard import sandbox
from autodev.host import folderwalk, gitquarantine, hostgit
from tests.agents.conftest import Fakes
from tests.conftest import git, run_dir, thread_of, write_team
from tests.e2e.helpers import BUILDER, call, done_accepted, events, post, state_of, step

BOX = sandbox.resolve("auto")
needs_bwrap = pytest.mark.skipif(not BOX.active, reason=f"no working bubblewrap here: {BOX.problem}")


@pytest.fixture(autouse=True)
def _no_pins():
    yield
    hostgit._run_pins.clear()
    gitquarantine._pins.clear()


def evil(mark: Path) -> str:
    """A shell line a participant runs: evil.sh, a program that touches `mark` (outside the
    repository) when the user's git runs it as an fsmonitor or a hook."""
    return f"printf '#!/bin/sh\\ntouch {mark}\\ncat >/dev/null\\nexit 1\\n' > evil.sh && chmod +x evil.sh"


def users_git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """The user's own plain git, with a clean environment (no GIT_* of the tests)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(
        ["git", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


def notes(repo: Path) -> str:
    return "\n".join(p["text"] for p in thread_of(repo) if p["from"] == "system")


def run(
    autodev, repo: Path, *commands: str, expect: int = 0, config: str = ""
) -> subprocess.CompletedProcess:
    script = "".join(step("builder", call("run_command", command=c)) for c in commands)
    script += post("builder", "work_done", "did it", "builder") + done_accepted("builder")
    write_team(repo, BUILDER, script, config)
    r = autodev(repo, "start", "--foreground", "--until-idle", "go", timeout=180)
    assert r.returncode == expect, r.stdout + r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    return r


@needs_bwrap
def test_finding8_a_planted_commondir_is_quarantined_and_the_users_git_status_runs_nothing(
    repo, autodev, tmp_path
):
    mark = tmp_path / "MARK"
    plant = (
        f"{evil(mark)} && cp -a .git evilgit && printf '[core]\\n\\tfsmonitor = %s\\n' $PWD/evil.sh >> evilgit/config"
        " && echo $PWD/evilgit > .git/commondir && echo x > new.txt"
    )
    run(autodev, repo, plant)
    assert not (repo / ".git" / "commondir").exists()
    assert state_of(repo)["state"] == "complete"
    users_git(repo, "status")
    assert not mark.exists()
    said = notes(repo)
    assert ".git/commondir" in said and "quarantine" in said, said
    [ev] = events(repo, "git_quarantined")
    moved = Path(ev["folder"]) / ".git" / "commondir"
    assert moved.is_file() and moved.parent.parent.parent.name == "quarantine"
    assert moved.is_relative_to(run_dir(repo))
    # The file moved aside is the payload: put back, the user's git runs it.
    (repo / ".git" / "commondir").write_text(moved.read_text())
    users_git(repo, "status")
    assert mark.exists()


@needs_bwrap
def test_finding8_other_forms_are_quarantined_through_the_real_daemon(repo, autodev, tmp_path):
    mark = tmp_path / "MARK"
    hook_mark = tmp_path / "HOOK"
    commands = [
        evil(mark),
        # a nested repository staged as a gitlink, whose config names the fsmonitor
        "git init -q sub && git -C sub commit -q --allow-empty -m s && echo x > sub/f"
        " && printf '[core]\\n\\tfsmonitor = %s\\n' $PWD/evil.sh >> sub/.git/config && git add sub",
        # a submodule's git folder under .git/modules with a hook, and its config
        f"mkdir -p .git/modules/m/hooks && cp -r .git/HEAD .git/objects .git/refs .git/modules/m/"
        f" && printf '#!/bin/sh\\ntouch {hook_mark}\\n' > .git/modules/m/hooks/post-checkout"
        " && printf '[core]\\n\\tpager = %s\\n' $PWD/evil.sh > .git/modules/m/config",
        # the repository's own config.worktree and an alternates redirect
        "printf '[core]\\n\\tfsmonitor = %s\\n' $PWD/evil.sh > .git/config.worktree"
        " && mkdir -p .git/objects/info && echo /tmp > .git/objects/info/alternates",
        # a .gitmodules naming a command
        "printf '[submodule \"sub\"]\\n\\tpath = sub\\n\\turl = ./sub\\n\\tupdate = !touch /tmp/x\\n' > .gitmodules",
    ]
    run(autodev, repo, *commands)
    moved = {p for e in events(repo, "git_quarantined") for p in e["paths"]}
    assert {
        "sub/.git/config",
        ".git/modules/m/hooks/post-checkout",
        ".git/modules/m/config",
        ".git/config.worktree",
        ".git/objects/info/alternates",
        ".gitmodules",
    } <= moved, moved
    said = notes(repo)
    for p in moved:
        assert p in said
    users_git(repo, "status")
    users_git(repo, "-C", "sub", "status")
    assert not mark.exists() and not hook_mark.exists()


def test_finding8_the_nested_fsmonitor_form_runs_on_plain_git_without_the_quarantine(repo, tmp_path):
    """The form of the test above, planted by hand: the user's git runs it, and the sweep moves
    exactly the file that carries it (the repository's own files at the pin stay)."""
    mark = tmp_path / "MARK"
    prog = tmp_path / "evil.sh"
    prog.write_text(f"#!/bin/sh\ntouch {mark}\ncat >/dev/null\nexit 1\n")
    prog.chmod(0o755)
    (repo / ".git" / "info" / "attributes").write_text("* text\n")
    gitquarantine.pin(repo)
    sub = repo / "sub"
    git(repo, "init", "-q", "sub")
    git(sub, "commit", "-q", "--allow-empty", "-m", "s")
    git(repo, "add", "sub")
    (sub / "f").write_text("x\n")
    with open(sub / ".git" / "config", "a") as f:
        f.write(f"[core]\n\tfsmonitor = {prog}\n")
    users_git(repo, "status")
    assert mark.exists()
    mark.unlink()
    moved = gitquarantine.sweep(repo, tmp_path / "q")
    assert [m.path for m in moved] == ["sub/.git/config"]
    assert "core.fsmonitor" in moved[0].why
    assert (tmp_path / "q" / "sub" / ".git" / "config").is_file()
    users_git(repo, "status")
    assert not mark.exists()
    assert gitquarantine.sweep(repo, tmp_path / "q2") == []  # nothing left to move
    assert (repo / ".git" / "info" / "attributes").exists()  # the user's, and picks no program


def test_a_safe_nested_config_and_the_users_own_files_stay(repo, tmp_path):
    (repo / ".git" / "config.worktree").write_text("[core]\n\tfsmonitor = /bin/true\n")  # the user's
    gitquarantine.pin(repo)
    git(repo, "init", "-q", "sub")
    git(repo / "sub", "commit", "-q", "--allow-empty", "-m", "s")
    git(repo, "add", "sub")
    (repo / ".gitmodules").write_text('[submodule "sub"]\n\tpath = sub\n\turl = ./sub\n')
    assert gitquarantine.sweep(repo, tmp_path / "q") == []
    assert (repo / ".git" / "config.worktree").exists() and (repo / ".gitmodules").exists()
    (repo / "sub" / ".git").rename(tmp_path / "subgit")
    (repo / "sub" / ".git").write_text(f"gitdir: {tmp_path / 'subgit'}\n")
    [m] = gitquarantine.sweep(repo, tmp_path / "q")
    assert m.path == "sub/.git" and "outside the repository" in m.why


@needs_bwrap
def test_finding13_a_branch_written_backwards_is_named_and_put_back_while_rewriting_is_gated(repo, autodev):
    git(repo, "commit", "-q", "--allow-empty", "-m", "teammate's work")
    kept = git(repo, "rev-parse", "HEAD").strip()
    first = git(repo, "rev-parse", "HEAD~1").strip()
    run(autodev, repo, f"echo {first} > .git/refs/heads/main && echo x > new.txt")
    said = notes(repo)
    assert "moved branch main" in said and "teammate's work" in said and kept[:7] in said, said
    assert git(repo, "rev-parse", "refs/heads/main").strip() == kept  # put back (gated by default)
    [ev] = events(repo, "branch_moved_back")
    assert ev["restored"] is True and ev["dropped"][0].startswith(kept[:7])
    reqs = (run_dir(repo) / "scripted-requests.jsonl").read_text()
    assert "post kind=gate" in reqs  # the participant was told how to ask


@needs_bwrap
def test_finding13_without_a_rewrite_gate_the_move_stands_and_is_still_named(repo, autodev):
    git(repo, "commit", "-q", "--allow-empty", "-m", "teammate's work")
    first = git(repo, "rev-parse", "HEAD~1").strip()
    run(autodev, repo, f"echo {first} > .git/refs/heads/main", config='gateRequired = ["git push*"]\n')
    assert git(repo, "rev-parse", "refs/heads/main").strip() == first
    assert "teammate's work" in notes(repo)
    [ev] = events(repo, "branch_moved_back")
    assert ev["restored"] is False


@needs_bwrap
def test_finding14_a_gitmodules_command_and_a_gitlink_do_not_end_the_daemon(repo, autodev):
    plant = (
        "printf '[submodule \"x\"]\\n\\tpath = x\\n\\turl = ./x\\n\\tupdate = !touch /tmp/m\\n' > .gitmodules"
        " && git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),x && git add .gitmodules"
        " && git commit -qm sub && echo y > y.txt && git add y.txt && git commit -qm y"
    )
    run(autodev, repo, plant)
    st = state_of(repo)
    assert st["state"] == "complete", st
    [credited] = [p for p in thread_of(repo) if p["kind"] == "work_done"]
    assert credited["credit"] and "y.txt" in credited["credit"]["files"]


@needs_bwrap
@pytest.mark.parametrize(
    "plant, named",
    [
        ("printf 'not an index' > .git/index", "index"),
        (
            "echo 0123456789012345678901234567890123456789 > .git/refs/heads/ghost && git update-ref -d HEAD",
            "",
        ),
        (
            "printf 'ref: refs/heads/b\\n' > .git/refs/heads/a && printf 'ref: refs/heads/a\\n' > .git/refs/heads/b",
            "",
        ),
        ("mkdir -p '.git/refs/heads/o d' && echo $(git rev-parse HEAD) > '.git/refs/heads/o d/..x'", ""),
        (
            "printf 'ref: refs/heads/self\\n' > .git/HEAD && printf 'ref: refs/heads/self\\n' > .git/refs/heads/self",
            "HEAD",
        ),
    ],
    ids=["corrupt-index", "missing-object-and-no-head", "symref-loop", "odd-ref-name", "head-loop"],
)
def test_finding14_odd_refs_and_a_corrupt_index_pause_or_go_on_never_exit(repo, autodev, plant, named):
    script = step("builder", call("run_command", command=plant + "; echo z > z.txt"))
    script += post("builder", "work_done", "did it", "builder") + done_accepted("builder")
    write_team(repo, BUILDER, script)
    r = autodev(repo, "start", "--foreground", "--until-idle", "go", timeout=180)
    assert "Traceback" not in r.stderr, r.stderr
    st = state_of(repo)
    assert r.returncode in (0, 3), r.stdout + r.stderr
    if r.returncode == 3:
        assert st["state"] == "paused" and st["reason"]["code"] == "refused", st
        assert "git" in st["reason"]["text"] and named in st["reason"]["text"], st
        status = autodev(repo, "status", check=True).stdout
        assert "refused" in status or "git" in status
    else:
        assert st["state"] == "complete", st


def test_a_fifo_planted_as_a_ref_is_moved_at_once_and_no_git_stalls_on_it(repo, autodev):
    plant = "mkfifo .git/refs/heads/stall .git/ORIG_HEAD; echo z > z.txt"
    script = step("builder", call("run_command", command=plant))
    script += post("builder", "work_done", "did it", "builder") + done_accepted("builder")
    write_team(repo, BUILDER, script)
    r = autodev(repo, "start", "--foreground", "--until-idle", "go", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert state_of(repo)["state"] == "complete"
    moved = {p for e in events(repo, "git_quarantined") for p in e["paths"]}
    assert moved == {".git/refs/heads/stall", ".git/ORIG_HEAD"}, moved
    assert ".git/refs/heads/stall" in notes(repo)
    assert "main" in users_git(repo, "branch", "--list").stdout


@needs_bwrap
def test_finding8_the_audits_check_is_swept_before_any_git_reads_the_repository(repo, autodev, tmp_path):
    """auditCheck runs the repository's code (its tests) with the repository writable."""
    mark = tmp_path / "MARK"
    check = (
        f"{evil(mark)} && cp -a .git evilgit && printf '[core]\\n\\tfsmonitor = %s\\n' $PWD/evil.sh >> evilgit/config"
        " && echo $PWD/evilgit > .git/commondir"
    )
    run(
        autodev,
        repo,
        "echo x > new.txt && git add new.txt && git commit -qm new",
        config="auditCheck = '''" + check + "'''\n",
    )
    assert state_of(repo)["state"] == "complete", state_of(repo)
    assert not (repo / ".git" / "commondir").exists()
    [ev] = events(repo, "git_quarantined")
    assert ev["participant"] == "audit" and ev["paths"] == [".git/commondir"]
    users_git(repo, "status")
    assert not mark.exists()


def test_a_quarantine_a_crash_left_unnamed_is_named_when_the_daemon_starts(repo, autodev):
    folder = run_dir(repo) / "quarantine" / "2-1" / ".git"
    folder.mkdir(parents=True)
    (folder / "commondir").write_text("/elsewhere\n")
    # a move across file systems cut between its copy and its delete: both are there
    bad = '[submodule "x"]\n\tpath = x\n\turl = ./x\n\tupdate = !touch /tmp/m\n'
    (folder.parent / ".gitmodules").write_text(bad)
    (repo / ".gitmodules").write_text(bad)
    run(autodev, repo, "echo x > new.txt")
    [note] = [
        p for p in thread_of(repo) if p["from"] == "system" and "before the daemon stopped" in p["text"]
    ]
    assert ".git/commondir" in note["text"] and str(folder.parent) in note["text"]
    assert not (repo / ".gitmodules").exists()
    assert [e["paths"] for e in events(repo, "git_quarantined")] == [[".gitmodules"]]


def test_finding14_a_git_failure_is_typed_and_names_git(repo):
    from autodev.errors import RepositoryRefused
    from autodev.harness import credit

    (repo / ".git" / "index").write_bytes(b"not an index")
    with pytest.raises(hostgit.GitFailed, match="index") as e:
        credit.take_baseline(repo)
    assert isinstance(e.value, RepositoryRefused) and "git status" in e.value.fix


@needs_bwrap
def test_finding13_a_move_back_under_an_approved_gate_stands(repo, autodev):
    git(repo, "commit", "-q", "--allow-empty", "-m", "teammate's work")
    first = git(repo, "rev-parse", "HEAD~1").strip()
    command = f"git reset --hard {first}"
    script = post("builder", "gate", f"I need to run `{command}` to drop the teammate's commit")
    script += step("builder", call("run_command", command=command))
    script += post("builder", "work_done", "dropped it", "builder") + done_accepted("builder")
    write_team(repo, BUILDER, script)
    r = autodev(repo, "start", "--foreground", "--until-idle", "go", timeout=180)
    assert r.returncode == 3 and state_of(repo)["state"] == "gated", r.stdout + r.stderr
    autodev(repo, "approve", check=True)
    r = autodev(repo, "start", "--foreground", "--until-idle", timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    assert git(repo, "rev-parse", "refs/heads/main").strip() == first  # the approved move stands
    [ev] = events(repo, "branch_moved_back")
    assert ev["restored"] is False and "teammate's work" in ev["dropped"][0]
    assert "teammate's work" in notes(repo)


AGENT_TEAM = """
[[participants]]
name = "builder"
agent = "codex"
model = "fast-model"
write = true

[[participants]]
name = "reviewer"
model = "scripted"

[audit]
model = "scripted"

[scripted]
path = "script.toml"
"""


@pytest.fixture
def fakes(tmp_path, monkeypatch) -> Fakes:
    """The fake agent CLIs of tests/agents on PATH."""
    f = Fakes(tmp_path / "fakes")
    for k, v in f.env().items():
        monkeypatch.setenv(k, v)
    return f


def test_finding8_an_agent_clis_planted_files_are_moved_at_its_turns_end_or_before_the_pause(
    repo, autodev, fakes, tmp_path
):
    """An agent CLI runs outside the sandbox, its commands unseen one by one: what it left is
    swept when its turn ends, or when a refusal pauses the run first."""
    mark = tmp_path / "MARK"
    prog = tmp_path / "evil.sh"
    prog.write_text(f"#!/bin/sh\ntouch {mark}\ncat >/dev/null\nexit 1\n")
    prog.chmod(0o755)
    evilgit = tmp_path / "evilgit"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(evilgit))
    git(evilgit, "config", "core.fsmonitor", str(prog))
    gitmodules = '[submodule "x"]\n\tpath = x\n\turl = ./x\n\tupdate = !touch /tmp/m\n'
    fakes.play(
        codex=[
            [
                ["write", ".gitmodules", gitmodules],
                ["post", {"kind": "say", "text": "reviewer, look", "handoff": "reviewer"}],
            ],
            [
                ["write", ".git/commondir", f"{evilgit}\n"],
                ["write", "new.txt", "x\n"],
                ["post", {"kind": "work_done", "text": "done", "handoff": "reviewer"}],
            ],
        ]
    )
    write_team(repo, AGENT_TEAM, post("reviewer", "say", "go on", "builder"))
    r = autodev(repo, "start", "--foreground", "--until-idle", "go", timeout=180)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 3, r.stdout + r.stderr
    st = state_of(repo)
    assert st["state"] == "paused" and st["reason"]["code"] == "refused", st
    moved = [(e["participant"], p) for e in events(repo, "git_quarantined") for p in e["paths"]]
    assert moved == [("builder", ".gitmodules"), ("builder", ".git/commondir")], moved
    # the pause says the file is gone already, not "remove .git/commondir"
    assert "autodev moved .git/commondir out of the repository" in st["reason"]["text"], st
    assert not (repo / ".git" / "commondir").exists() and not (repo / ".gitmodules").exists()
    said = notes(repo)
    assert ".gitmodules" in said and ".git/commondir" in said
    users_git(repo, "status")
    assert not mark.exists()


def test_finding8_a_git_folder_planted_in_a_subfolder_is_what_the_users_git_there_would_use(repo, tmp_path):
    """The user runs git in a subfolder (`cd src && git status`): git finds a planted `src/.git`
    first. A folder, or a `gitdir:` file naming a copy inside the repository, both carry it."""
    mark = tmp_path / "MARK"
    prog = tmp_path / "evil.sh"
    prog.write_text(f"#!/bin/sh\ntouch {mark}\ncat >/dev/null\nexit 1\n")
    prog.chmod(0o755)
    for d in ("src", "docs"):
        (repo / d).mkdir()
        (repo / d / "a.txt").write_text("a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "folders")
    gitquarantine.pin(repo)
    shutil.copytree(repo / ".git", repo / "evilgit")
    with open(repo / "evilgit" / "config", "a") as f:
        f.write(f"[core]\n\tfsmonitor = {prog}\n")
    (repo / "src" / ".git").write_text("gitdir: ../evilgit\n")
    git(repo / "docs", "init", "-q")
    with open(repo / "docs" / ".git" / "config", "a") as f:
        f.write(f"[core]\n\tfsmonitor = {prog}\n")
    for d in ("src", "docs"):
        users_git(repo / d, "status")
        assert mark.exists(), d
        mark.unlink()
    moved = {m.path for m in gitquarantine.sweep(repo, tmp_path / "q")}
    assert moved == {"evilgit/config", "docs/.git/config"}, moved
    for d in ("src", "docs"):
        users_git(repo / d, "status")
    assert not mark.exists()


def test_a_fifo_or_a_link_where_git_reads_configuration_is_moved_without_being_opened(repo, tmp_path):
    gitquarantine.pin(repo)
    os.mkfifo(repo / ".gitmodules")
    (repo / ".git" / "config.worktree").symlink_to("/etc/passwd")
    moved = {m.path: m.why for m in gitquarantine.sweep(repo, tmp_path / "q")}
    assert moved == {
        ".git/config.worktree": "is a symbolic link that git would follow",
        ".gitmodules": "is not a regular file (git would open it)",
    }
    assert os.path.islink(tmp_path / "q" / ".git" / "config.worktree")


def test_a_fifo_or_a_link_anywhere_in_the_git_folder_is_moved_before_a_git_reads_it(
    repo, tmp_path, monkeypatch
):
    """A FIFO as a ref stalls `git branch` and `rev-list --branches` (autodev's `dropped`) until
    they are killed; as a loose object, whatever reads it. A link the user had stays, and so does
    a socket (git's fsmonitor listens on one there; opening it fails at once)."""
    (repo / ".git" / "info" / "users-link").symlink_to("exclude")
    gitquarantine.pin(repo)
    monkeypatch.chdir(repo / ".git")  # a socket's path must be short: bound by a relative name
    listening = socket.socket(socket.AF_UNIX)
    listening.bind("fsmonitor--daemon.ipc")
    os.mkfifo(repo / ".git" / "refs" / "heads" / "stall")
    head = git(repo, "rev-parse", "HEAD").strip()
    loose = repo / ".git" / "objects" / "ff"
    loose.mkdir(exist_ok=True)
    os.mkfifo(loose / ("0" * 38))
    (repo / ".git" / "packed-refs").symlink_to("/etc/passwd")
    moved = {m.path: m.why for m in gitquarantine.sweep(repo, tmp_path / "q")}
    assert moved == {
        ".git/refs/heads/stall": "is not a regular file (git would open it)",
        f".git/objects/ff/{'0' * 38}": "is not a regular file (git would open it)",
        ".git/packed-refs": "is a symbolic link that git would follow",
    }
    assert (repo / ".git" / "info" / "users-link").is_symlink()
    assert stat.S_ISSOCK(os.lstat(repo / ".git" / "fsmonitor--daemon.ipc").st_mode)
    listening.close()
    assert users_git(repo, "branch", "--list").stdout.strip() == "* main"  # nothing left to block on
    assert git(repo, "rev-list", "--branches").split()[0] == head
    assert gitquarantine.sweep(repo, tmp_path / "q2") == []


def test_folders_listed_before_are_looked_at_again_once_they_change(repo, tmp_path, monkeypatch):
    """The sweep after each command lists only folders that changed since its last look (a stat
    each): what appears in a folder it kept, or a folder swapped for a link, is still seen."""
    monkeypatch.setattr(folderwalk, "RACY_NS", 0)  # keep folders that changed just now
    outside = tmp_path / "outside"
    outside.mkdir()
    os.mkfifo(outside / "host-fifo")
    (repo / "src").mkdir()
    (repo / "src" / "a.py").write_text("a\n")
    gitquarantine.pin(repo)
    assert gitquarantine.sweep(repo, tmp_path / "q") == []
    assert folderwalk.kept(str(repo / ".git" / "refs" / "heads"))  # not listed again
    time.sleep(0.05)  # past the file system's clock tick
    os.mkfifo(repo / ".git" / "refs" / "heads" / "stall")
    git(repo, "init", "-q", str(repo / "src"))
    (repo / "src" / ".git" / "config").write_text("[core]\n\tfsmonitor = /bin/false\n")
    tags = repo / ".git" / "refs" / "tags"
    shutil.rmtree(tags)
    tags.symlink_to(outside)
    moved = {m.path: m.why for m in gitquarantine.sweep(repo, tmp_path / "q2")}
    assert moved == {
        ".git/refs/heads/stall": "is not a regular file (git would open it)",
        ".git/refs/tags": "is a symbolic link that git would follow",
        "src/.git/config": "is configuration git reads for a submodule or nested repository, with core.fsmonitor",
    }, moved
    assert stat.S_ISFIFO(os.lstat(outside / "host-fifo").st_mode)  # what the link named stays


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no second file system (/dev/shm) here")
def test_a_move_to_another_file_system_copies_files_and_deletes_a_fifo(repo, tmp_path):
    other = Path(tempfile.mkdtemp(dir="/dev/shm"))
    try:
        if os.stat(other).st_dev == os.stat(repo).st_dev:
            pytest.skip("/dev/shm is on the repository's file system here")
        gitquarantine.pin(repo)
        os.mkfifo(repo / ".gitmodules")
        (repo / ".git" / "commondir").write_text("/elsewhere\n")
        moved = {m.path for m in gitquarantine.sweep(repo, other / "q")}
        assert moved == {".gitmodules", ".git/commondir"}
        assert (other / "q" / ".git" / "commondir").read_text() == "/elsewhere\n"
        assert (other / "q" / ".gitmodules.removed").is_file()
        assert not os.path.lexists(repo / ".gitmodules") and not (repo / ".git" / "commondir").exists()
    finally:
        shutil.rmtree(other)
