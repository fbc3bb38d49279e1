"""`autodev init`: copying the shipped example and teams into a repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from autodev.config import RunConfig, load_config, load_team
from autodev.config.project import init_project, shipped_teams
from autodev.errors import UsageError
from autodev.store.paths import shipped


def _build(r: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=r, check=True)
    subprocess.run(["git", "config", "user.name", "t"], cwd=r, check=True)
    subprocess.run(["git", "config", "user.email", "t@example.com"], cwd=r, check=True)


@pytest.fixture
def repo(tmp_path: Path, repo_templates) -> Path:
    return repo_templates(tmp_path / "proj", _build)


def test_shipped_teams():
    assert shipped_teams() == ["pair", "solo", "trio"]


def test_init_copies_the_example(repo):
    folder = init_project(repo)
    assert folder == repo / ".autodev"
    example = shipped("autodev.example")
    names = sorted(p.name for p in example.iterdir())
    assert sorted(p.name for p in folder.iterdir()) == names
    for name in names:
        assert (folder / name).read_bytes() == (example / name).read_bytes()
    assert load_team(folder / "team.toml").names() == ["builder", "reviewer"]
    assert load_config(folder / "config.toml") == RunConfig()


def test_init_refuses_an_existing_folder_without_force(repo):
    folder = init_project(repo)
    (folder / "team.toml").write_text("# mine\n")
    with pytest.raises(UsageError) as info:
        init_project(repo)
    assert "already exists" in info.value.message and "--force" in info.value.fix
    assert (folder / "team.toml").read_text() == "# mine\n", "nothing may be overwritten"


def test_force_overwrites_shipped_files_and_keeps_the_users(repo):
    folder = init_project(repo)
    (folder / "team.toml").write_text("# mine\n")
    (folder / "prompts").mkdir()
    (folder / "prompts" / "turn.md").write_text("my turn prompt\n")
    init_project(repo, force=True)
    assert (folder / "team.toml").read_bytes() == (shipped("autodev.example") / "team.toml").read_bytes()
    assert (folder / "prompts" / "turn.md").read_text() == "my turn prompt\n"


@pytest.mark.parametrize("name,size", [("solo", 1), ("pair", 2), ("trio", 3)])
def test_init_with_a_team(repo, name, size):
    folder = init_project(repo, team=name)
    assert (folder / "team.toml").read_bytes() == (shipped("teams") / f"{name}.toml").read_bytes()
    assert len(load_team(folder / "team.toml").participants) == size
    assert (folder / "config.toml").exists() and (folder / "README.md").exists()


def test_force_with_a_team_replaces_the_team(repo):
    init_project(repo, team="trio")
    folder = init_project(repo, team="solo", force=True)
    assert load_team(folder / "team.toml").names() == ["builder"]


def test_unknown_team_lists_the_shipped_ones_and_creates_nothing(repo):
    with pytest.raises(UsageError) as info:
        init_project(repo, team="quartet")
    assert '"quartet"' in info.value.message
    assert "pair" in info.value.fix and "solo" in info.value.fix and "trio" in info.value.fix
    assert not (repo / ".autodev").exists()


def test_team_name_cannot_escape_the_teams_folder(repo):
    with pytest.raises(UsageError):
        init_project(repo, team="../pyproject")
    assert not (repo / ".autodev").exists()


def test_a_file_named_autodev_is_refused_even_with_force(repo):
    (repo / ".autodev").write_text("not a folder")
    with pytest.raises(UsageError) as info:
        init_project(repo, force=True)
    assert "not a folder" in info.value.message
