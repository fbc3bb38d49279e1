"""`start --best-of`, `pick` and `send --all` refuse what they cannot do, naming the argument and
the fix (exit 2), before anything is made."""

from __future__ import annotations

import pytest

from tests.conftest import write_team
from tests.e2e.helpers import BUILDER, done_accepted

CASES = [
    (["start", "--best-of", "0", "x"], "--best-of 0: give 1 to 16 runs", "autodev start --best-of 3"),
    (["start", "--best-of", "2", "--parallel", "0", "x"], "--parallel 0: give 1 or more", "--parallel 2"),
    (["start", "--best-of", "2"], "a group needs its objective", "autodev start --best-of 3"),
    (["start", "--parallel", "2", "x"], "--parallel, --vary and --group-max-cost-usd go with --best-of N", "add --best-of N"),
    (["start", "--best-of", "2", "--vary", "color=a", "x"], "--vary color=a: give team=FILE,FILE", "--vary team="),
    (["start", "--best-of", "2", "--vary", "team=nosuch.toml", "x"], "nosuch.toml: no such file", "give team files"),
    (["start", "--best-of", "2", "--foreground", "x"], "--foreground does not go with --best-of", "drop --foreground"),
    (["start", "--resume-group", "abc"], "no best-of group 'abc'", "autodev status"),
    (["pick"], "no best-of group was started in", "autodev start --best-of 3"),
    (["pick", "2"], "run 2 given without --apply", "autodev pick 2 --apply"),
    (["send", "--all", "hi"], "--all sends to every run of a best-of group", "drop --all"),
    (["runs", "prune"], "say what to prune: --older-than AGE, or --group ID", "--older-than 30d"),
]  # fmt: skip


@pytest.mark.parametrize("args, says, fix", CASES)
def test_refused_with_the_fix(repo, inproc, args, says, fix):
    write_team(repo, BUILDER, done_accepted("builder"))
    r = inproc(repo, *args)
    assert r.returncode == 2, r.stdout + r.stderr
    said, fixed = r.stderr.splitlines()[:2]
    assert said.startswith("autodev: ") and says in said, r.stderr
    assert fixed.startswith("  fix: ") and fix in fixed, r.stderr
    from autodev.group.record import of_repo

    assert of_repo(repo) == []  # nothing was made


def test_a_variant_whose_script_is_not_in_autodev_is_refused_and_leaves_nothing(repo, inproc):
    """A variant's relative paths are read from .autodev/, as the runs will read them."""
    write_team(repo, BUILDER, done_accepted("builder"))
    other = repo.parent / "elsewhere"
    other.mkdir()
    (other / "team.toml").write_text(BUILDER.replace('"script.toml"', '"mine.toml"'))
    (other / "mine.toml").write_text(done_accepted("builder"))
    r = inproc(repo, "start", "--best-of", "2", "--vary", f"team={other / 'team.toml'}", "x")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "mine.toml" in r.stderr and "does not exist" in r.stderr
    from autodev.group.record import groups_root, of_repo

    assert of_repo(repo) == [] and not any(groups_root(repo).iterdir())


def test_vary_model_gives_each_run_the_team_on_its_model(repo, tmp_path):
    from autodev.config import load_team
    from autodev.group.launch import model_variants

    team = tmp_path / "team.toml"
    team.write_text(
        '[[participants]]\nname = "builder"\nmodel = "openai/gpt-5"\nwrite = true\n\n'
        '[[participants]]\nname = "reviewer"\nmodel = "openai/gpt-5"\n\n[audit]\nmodel = "openai/gpt-5"\n'
    )
    variants = model_variants(team, ["anthropic/claude-sonnet-4-5", "openai/gpt-5-mini"])
    assert [name for name, _ in variants] == ["model=anthropic/claude-sonnet-4-5", "model=openai/gpt-5-mini"]
    for (_name, text), model in zip(
        variants, ["anthropic/claude-sonnet-4-5", "openai/gpt-5-mini"], strict=True
    ):
        varied = tmp_path / f"{model.replace('/', '_')}.toml"
        varied.write_text(text)
        t = load_team(varied)
        assert [p.model for p in t.participants] == [model, model]
        assert t.audit.model == "openai/gpt-5"  # the audit is not a run's participant: it stays
