"""Issue 29, eval: nothing a task file or a team's work holds runs on the host.

- finding 1: the team's code, imported by the hidden tests, runs in the sandbox without keys;
- finding 2: a task's `setup` too (the network only with `"setup_network": true`);
- finding 3: a task repository's own `autodev/` package is never what the eval's daemons run (the
  run's `start` and the wall cap's `stop`, both with the clone as working directory), nor does a
  planted stdlib module load when `python -m autodev.…` is run in it;
- finding 9: a test patch's paths stay inside the clone.

Real eval runs (`autodev eval`, real daemons, scripted teams), real bubblewrap."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomli_w

from autodev.eval.workspace import clone, grade, shell_for
from autodev.guard.sandbox import resolve
from tests.conftest import git
from tests.eval.smoke import CONFIG, PRICE, grade_flags

BOX = resolve("auto")
needs_bwrap = pytest.mark.skipif(not BOX.active, reason=f"no working bubblewrap here: {BOX.problem}")

TOKEN = "tok-29-eval-1f0c9a7e5b3d"  # MY_SECRET_TOKEN of the eval's environment
HIDDEN = """diff --git a/tests/test_hidden.py b/tests/test_hidden.py
new file mode 100644
--- /dev/null
+++ b/tests/test_hidden.py
@@ -0,0 +1,8 @@
+import unittest
+
+import mod
+
+
+class Hidden(unittest.TestCase):
+    def test_answer(self):
+        self.assertEqual(mod.answer(), 42)
"""
TEST = "python3 -m unittest discover -s tests -t . -q"


def task_repo(where: Path, files: dict[str, str]) -> Path:
    """A task's source repository: `files` committed, tagged `base`."""
    where.mkdir(parents=True)
    git(where, "init", "-q", "-b", "main")
    for name, text in {"tests/__init__.py": "", **files}.items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_text(text)
    git(where, "add", "-A")
    git(where, "commit", "-qm", "base")
    git(where, "tag", "base")
    return where


def team(folder: Path, name: str, builder_calls: list[dict]) -> Path:
    """A scripted team whose builder makes `builder_calls`, commits, says done; the audit accepts."""
    folder.mkdir(parents=True, exist_ok=True)
    commit = {"tool": "run_command", "args": {"command": "git add -A && git commit -qm work || true"}}
    steps = [
        {"participant": "builder", "calls": [*builder_calls, commit]},
        {"participant": "builder", "calls": [{"tool": "post", "args": {"kind": "work_done", "text": "x"}}]},
        {"participant": "builder", "calls": [{"tool": "post", "args": {"kind": "done", "text": "done"}}]},
        {"participant": "audit", "calls": [{"tool": "verdict", "args": {"accept": True, "gap": "ok"}}]},
    ]
    (folder / f"{name}.script.toml").write_text(PRICE + tomli_w.dumps({"step": steps}))
    path = folder / f"{name}.toml"
    path.write_text(
        '[[participants]]\nname = "builder"\nmodel = "scripted"\nwrite = true\n\n'
        f'[audit]\nmodel = "scripted"\n\n[scripted]\npath = "{name}.script.toml"\n'
    )
    return path


def write_tasks(path: Path, tasks: list[dict]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


def results(out: Path) -> dict[str, dict]:
    return {x["task"]: x for x in map(json.loads, (out / "results.jsonl").read_text().splitlines())}


def everything_under(folder: Path) -> str:
    return "".join(
        p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file() and not p.is_symlink()
    )


# ------------------------------------------------------------------ findings 1 and 2


@pytest.fixture(scope="module")
def leak_eval(tmp_path_factory):
    """One eval of a task whose setup dumps the environment to a host file, and whose team writes
    a module that, imported by the hidden test, copies $MY_SECRET_TOKEN to two host paths."""
    from tests.conftest import GIT_ENV, Runner

    tmp = tmp_path_factory.mktemp("leak")
    # a module fixture runs before the autouse ones: the test environment given explicitly
    env = {
        **GIT_ENV,
        "MY_SECRET_TOKEN": TOKEN,
        "AUTODEV_HOME": str(tmp / "autodev-home"),
        "PYTHONPATH": str(Path(__file__).parents[1] / "guard"),
    }
    host = tmp / "host"  # where the attacks write, on the host: must stay empty
    host.mkdir()
    mod = (
        "import os\nfrom pathlib import Path\n\n"
        f"for target in ({str(host / 'graded')!r}, '../graded-beside-the-clone'):\n"
        "    try:\n"
        "        Path(target).write_text(os.environ.get('MY_SECRET_TOKEN', 'no token'))\n"
        "    except OSError as e:\n"
        "        print('could not write', target, e)\n\n\n"
        "def answer():\n    return 42\n"
    )
    builder = team(
        tmp / "teams", "leaky", [{"tool": "write_file", "args": {"path": "mod.py", "content": mod}}]
    )
    source = task_repo(tmp / "src", {"tests/test_visible.py": "import unittest\n"})
    tasks = write_tasks(
        tmp / "tasks.jsonl",
        [
            {
                "id": "leak",
                "repo": str(source),
                "base_commit": "base",
                "problem_statement": "write mod.answer",
                "setup": f"env > {host / 'setup-env'}; env; echo setup ran",
                "test_patch": HIDDEN,
                "test_command": TEST,
            }
        ],
    )
    (tmp / "config.toml").write_text(CONFIG)
    out = tmp / "out"
    runner = Runner()
    try:
        r = runner(
            tmp, "eval", str(tasks), "--team", str(builder), "--out", str(out), "--config",
            str(tmp / "config.toml"), env=env, timeout=400,
        )  # fmt: skip
    finally:
        runner.cleanup()
    return r, out, host


@needs_bwrap
@pytest.mark.timeout(600)
def test_the_teams_code_is_graded_in_the_sandbox_without_keys(leak_eval):
    r, out, host = leak_eval
    x = results(out)["leak"]
    assert x["error"] is None, r.stdout + r.stderr
    assert x["resolved"] is True  # the hidden test imported the team's module: grading ran
    assert not (host / "graded").exists()
    folder = Path(x["folder"])
    assert not (folder / "graded-beside-the-clone").exists()
    assert "could not write" in (folder / "grade.log").read_text()
    assert TOKEN not in everything_under(out)


@needs_bwrap
@pytest.mark.timeout(600)
def test_the_tasks_setup_runs_in_the_sandbox_without_keys(leak_eval):
    r, out, host = leak_eval
    x = results(out)["leak"]
    assert x["error"] is None, r.stdout + r.stderr
    assert not (host / "setup-env").exists()
    log = (Path(x["folder"]) / "setup.log").read_text()
    assert "setup ran" in log and "PATH=" in log
    assert "MY_SECRET_TOKEN" not in log and TOKEN not in log
    assert TOKEN not in everything_under(out)


@needs_bwrap
def test_setup_gets_the_network_only_when_the_task_asks(tmp_path):
    """Offline, the sandbox's own network namespace has only `lo`; setup_network gives the host's."""
    repo = clone(str(task_repo(tmp_path / "src", {})), "base", tmp_path / "repo")
    shell = shell_for(False)
    host_ifaces = {line.split(":")[0].strip() for line in Path("/proc/net/dev").read_text().splitlines()[2:]}
    seen = {}
    for network in (False, True):
        log = tmp_path / f"net-{network}.log"
        assert shell.run("cat /proc/net/dev", tmp_path / "repo", log, 30, network=network) == 0
        seen[network] = {line.split(":")[0].strip() for line in log.read_text().splitlines()[2:]}
    assert repo and seen[False] == {"lo"}
    assert seen[True] == host_ifaces


def test_without_bubblewrap_eval_refuses_unless_told(tmp_path, autodev):
    source = task_repo(tmp_path / "src", {})
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": "t", "repo": str(source), "base_commit": "base", "problem_statement": "p",
          "test_patch": "--- a//etc/hostname\n+++ b//etc/hostname\n", "test_command": "true"}],
    )  # fmt: skip
    builder = team(tmp_path / "teams", "t", [])
    args = ["eval", str(tasks), "--team", str(builder), "--out", str(tmp_path / "out")]
    r = autodev(tmp_path, *args, env={"AUTODEV_BWRAP": ""})
    assert r.returncode == 2, r.stdout + r.stderr
    assert "runs each task's setup and tests in the sandbox" in r.stderr
    assert "bubblewrap" in r.stderr and "--grade-unsandboxed" in r.stderr
    assert not (tmp_path / "out" / "results.jsonl").exists()

    r = autodev(tmp_path, *args, "--grade-unsandboxed", env={"AUTODEV_BWRAP": ""})
    assert r.returncode == 1, r.stdout + r.stderr  # ran: the task's bad test patch is its error
    assert "unsandboxed" in r.stdout
    assert "'/etc/hostname'" in results(tmp_path / "out")["t"]["error"]


# ------------------------------------------------------------------ finding 3


@pytest.mark.timeout(600)
def test_a_task_repositorys_autodev_package_never_runs(tmp_path, autodev):
    """The run's `start` and, past the wall cap, its `stop` both run with the clone as working
    directory: with `-m autodev` and no `-P` either loads the clone's package."""
    marker = tmp_path / "hijacked"
    hostile = f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\nraise SystemExit(7)\n"
    source = task_repo(tmp_path / "src", {"autodev/__init__.py": hostile, "autodev/__main__.py": hostile})
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": "hijack", "repo": str(source), "base_commit": "base", "problem_statement": "p",
          "test_command": "true"}],
    )  # fmt: skip
    slow = team(tmp_path / "teams", "slow", [{"tool": "run_command", "args": {"command": "sleep 120"}}])
    (tmp_path / "config.toml").write_text(CONFIG)
    out = tmp_path / "out"
    # the cap only has to pass for `stop` to run: 6 s, whether or not the first call has run yet
    r = autodev(
        tmp_path, "eval", str(tasks), "--team", str(slow), "--out", str(out), "--config",
        str(tmp_path / "config.toml"), "--max-wall-min", "0.1", "--stop-grace-sec", "30", *grade_flags(), timeout=400,
    )  # fmt: skip
    x = results(out)["hijack"]
    assert not marker.exists(), x
    assert x["error"] is None and x["state"] is not None, r.stdout + r.stderr
    assert x["reason_code"] == "wall" and x["resolved"] is True


def test_python_m_autodev_in_a_folder_with_planted_modules_loads_ours(tmp_path):
    """`python -m autodev.<sub>` puts the working directory first on sys.path while the package
    loads: a planted `typing.py` must not run (the package drops that entry first)."""
    marker = tmp_path / "planted-ran"
    for name in ("typing", "pathlib", "dataclasses", "json", "re", "enum"):
        (tmp_path / f"{name}.py").write_text(
            f"open({str(marker)!r}, 'w').write('{name}')\nraise SystemExit(7)\n"
        )
    r = subprocess.run(
        [sys.executable, "-m", "autodev.config"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert not marker.exists(), marker.read_text()
    assert r.returncode == 0 and "secretFiles" in r.stdout, r.stderr[-2000:]


def test_the_autodev_command_in_a_repository_with_its_own_autodev_package_runs_ours(tmp_path):
    """What docs/security.md tells a user to type there: the console script never puts the
    working directory on sys.path (`python -m autodev` would: Python imports the repository's
    package before any code of ours runs, the documented limit)."""
    marker = tmp_path / "hijacked"
    (tmp_path / "autodev").mkdir()
    (tmp_path / "autodev" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    script = Path(sys.executable).parent / "autodev"
    r = subprocess.run([str(script), "--version"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert not marker.exists()
    assert r.returncode == 0 and "autodev" in r.stdout, r.stderr[-2000:]


def test_doctor_warns_of_a_repository_autodev_package(repo):
    from autodev.setup.doctor import run_checks

    (repo / "autodev").mkdir()
    (repo / "autodev" / "__init__.py").write_text("")
    [check] = [c for c in run_checks(repo) if c.name == "python -m autodev"]
    assert check.status == "warn" and "autodev/" in check.detail and "`autodev` command" in check.fix


# ------------------------------------------------------------------ finding 9


def test_an_absolute_test_patch_path_is_the_tasks_error_and_deletes_nothing(tmp_path, autodev):
    victim = tmp_path / "victim"
    victim.write_text("the user's file\n")
    source = task_repo(tmp_path / "src", {})
    bad = f"--- a/{victim}\n+++ b/{victim}\n@@ -1 +1 @@\n-x\n+y\n"
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": "abs", "repo": str(source), "base_commit": "base", "problem_statement": "p",
          "test_patch": bad, "test_command": "true"},
         {"id": "up", "repo": str(source), "base_commit": "base", "problem_statement": "p",
          "test_patch": "--- a/../../victim\n+++ b/../../victim\n", "test_command": "true"}],
    )  # fmt: skip
    builder = team(tmp_path / "teams", "t", [])
    out = tmp_path / "out"
    r = autodev(
        tmp_path, "eval", str(tasks), "--team", str(builder), "--out", str(out), *grade_flags(), timeout=200
    )
    assert r.returncode == 1, r.stdout + r.stderr  # each task is an error; the eval itself finished
    got = results(out)
    assert f"test_patch names {str(victim)!r}" in got["abs"]["error"]
    assert "test_patch names '../../victim'" in got["up"]["error"]
    assert victim.read_text() == "the user's file\n"
    assert (out / "summary.json").exists()


def test_a_link_the_team_left_cannot_point_the_grade_out_of_the_clone(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "test_hidden.py").write_text("the user's file\n")
    repo = tmp_path / "repo"
    base = clone(str(task_repo(tmp_path / "src", {})), "base", repo)
    (repo / "tests" / "__init__.py").unlink()
    (repo / "tests").rmdir()
    (repo / "tests").symlink_to(outside)  # what a team could leave behind
    g = grade(repo, base, HIDDEN, TEST, tmp_path / "grade.log", 30, shell_for(not BOX.active))
    assert g.resolved is False and g.error is not None and "'tests/test_hidden.py'" in g.error
    assert (outside / "test_hidden.py").read_text() == "the user's file\n"
    assert os.listdir(outside) == ["test_hidden.py"]
