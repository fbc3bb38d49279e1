"""The steering commands' quick path (autodev/cli/quick.py) does what the Typer app does: the same
output, exit code and files for every argument list it takes, and it leaves to the app every one
it does not understand (issue 33). Each case runs twice in this process (`inproc`): through
`autodev.cli.main` as the console script does, and through the Typer app alone."""

from __future__ import annotations

import json
import re

import pytest

from autodev.cli import quick
from autodev.store.paths import RunPaths
from tests.conftest import git, write_team

TEAM = """
[[participants]]
name = "builder"
model = "openai/gpt-5"
write = true
"""

OPEN = {
    "state": "paused",
    "gate": {"id": "1", "declarer": "builder", "text": "ship\nit? \x1b[31m"},
    "notices": {"1": {"id": "1", "from": "builder", "text": "a key, please", "hold": "network"}},
    "controls": [{"n": 1, "action": "stop", "at": 1}],
    "control_seq": 1,
}

CASES = [
    ["send", "hi"],
    ["send", "-"],
    ["send", "--file", "note.txt"],
    ["send", "-f", "note.txt"],
    ["send", "--file=note.txt"],
    ["send", "--file", "missing.txt"],
    ["send"],
    ["send", "a", "--file", "note.txt"],
    ["send", "  "],
    ["approve"],
    ["approve", "1"],
    ["approve", "2"],
    ["deny", "--reason", "no"],
    ["deny", "1", "--reason=no"],
    ["answer", "1", "yes"],
    ["answer", "9", "yes"],
    ["answer", "1", " "],
    ["notice", "--release", "1"],
    ["notice", "--hold", "1"],
    ["notice"],
    ["notice", "--release", "1", "--hold", "1"],
    ["notice", "--release", "7"],
    ["pause"],
    ["resume"],
    ["stop"],
    ["status"],
    ["status", "--json"],
    ["--version"],
    # left to the app: its usage errors and help
    ["send", "--bogus"],
    ["send", "-x"],
    ["answer", "1"],
    ["pause", "now"],
    ["deny", "--reason"],
    ["send", "--help"],
    ["send", "--", "-x"],
    ["status", "--json", "--json"],
]


def _run(inproc, repo, args, monkeypatch, quick_path: bool):
    write_team(repo, TEAM)
    (repo / "note.txt").write_text("from a file\n")
    paths = RunPaths(repo)
    paths.run_dir.mkdir(parents=True, exist_ok=True)
    paths.state.write_text(json.dumps(OPEN))
    with monkeypatch.context() as m:
        if not quick_path:
            m.setattr(quick, "run", lambda argv: None)
        r = inproc(repo, *args, input="from stdin")
    ids = re.compile(r"in-\d+-\d+-[0-9a-f]+")
    state = json.loads(paths.state.read_text())
    for c in state.get("controls", []):
        c.pop("at", None)  # when it was asked
    box = (
        sorted(
            {k: v for k, v in json.loads(p.read_text()).items() if k not in ("id", "ts")}
            for p in paths.inbox.glob("*.json")
        )
        if paths.inbox.exists()
        else []
    )

    def same(text: str) -> str:
        return ids.sub("ID", text).replace(str(paths.run_dir), "RUN").replace(str(repo), "REPO")

    return r.returncode, same(r.stdout), same(r.stderr), state, box


@pytest.mark.parametrize("args", CASES, ids=" ".join)
def test_quick_path_does_what_the_app_does(inproc, tmp_path, monkeypatch, args):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    repos = []
    for name in ("a", "b"):
        r = tmp_path / name / "repo"
        r.mkdir()
        git(r, "init", "-q", "-b", "main")
        git(r, "commit", "-q", "--allow-empty", "-m", "init")
        repos.append(r)
    fast = _run(inproc, repos[0], args, monkeypatch, quick_path=True)
    app = _run(inproc, repos[1], args, monkeypatch, quick_path=False)
    assert fast == app


@pytest.mark.parametrize(
    "argv, taken",
    [
        (["send", "hi"], True),
        (["send", "-"], True),
        (["send", "--file", "-"], True),
        (["send", "--file", "-x"], False),  # a value like an option: click's rules decide
        (["send", "--file"], False),
        (["send", "-fnote"], False),
        (["send", "a", "b"], False),
        (["send", "--", "x"], False),
        (["send", "--file", "a", "--file", "b"], False),
        (["status", "--json"], True),
        (["status", "--json=1"], False),
        (["answer", "1", "yes"], True),
        (["answer", "1"], False),
        (["pause", "--help"], False),
        (["thread"], False),
    ],
)
def test_what_the_quick_path_takes(argv, taken):
    spec = quick.COMMANDS.get(argv[0])
    assert (spec is not None and quick.parse(argv[1:], spec) is not None) == taken
