"""The --team files and the settings every run gets: a scripted team carries its script, team
names are the files' stems and must differ, caps become the budget keys of each run's config."""

from __future__ import annotations

import tomllib

import pytest

from autodev.errors import ConfigError, UsageError
from autodev.eval.teams import Caps, RunSettings, load_base_config, load_teams

TEAM = (
    '[[participants]]\nname = "builder"\nmodel = "scripted"\nwrite = true\n\n[scripted]\npath = "s/x.toml"\n'
)
SCRIPT = '[[step]]\nparticipant = "builder"\ntext = "hi"\n'


def test_a_scripted_team_carries_its_script_and_installs_it(tmp_path):
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "x.toml").write_text(SCRIPT)
    (tmp_path / "trio.toml").write_text(TEAM)
    [t] = load_teams([tmp_path / "trio.toml"])
    assert t.name == "trio" and t.script == SCRIPT
    t.install(tmp_path / "clone" / ".autodev")
    installed = tomllib.loads((tmp_path / "clone" / ".autodev" / "team.toml").read_text())
    assert installed["scripted"]["path"] == "script.toml"
    assert (tmp_path / "clone" / ".autodev" / "script.toml").read_text() == SCRIPT


def test_team_files_are_checked_and_named_apart(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    solo = '[[participants]]\nname = "solo"\nmodel = "openai/gpt-5"\nwrite = true\n'
    (tmp_path / "a" / "pair.toml").write_text(solo)
    (tmp_path / "b" / "pair.toml").write_text(solo)
    with pytest.raises(UsageError, match="both named 'pair'"):
        load_teams([tmp_path / "a" / "pair.toml", tmp_path / "b" / "pair.toml"])
    (tmp_path / "bad.toml").write_text('[[participants]]\nname = "solo"\nmodle = "x"\n')
    with pytest.raises(ConfigError, match="modle"):
        load_teams([tmp_path / "bad.toml"])
    with pytest.raises(UsageError, match="no such file"):
        load_teams([tmp_path / "none.toml"])
    with pytest.raises(UsageError, match="no team given"):
        load_teams([])


def test_caps_become_budget_keys_over_the_base_config(tmp_path):
    (tmp_path / "config.toml").write_text('gateMode = "auto"\nmaxTokens = 5\n')
    base = load_base_config(tmp_path / "config.toml")
    s = RunSettings(caps=Caps(max_cost_usd=1.5, max_tokens=1000, max_wall_min=3), config=base)
    assert tomllib.loads(s.config_toml()) == {"gateMode": "auto", "maxTokens": 1000, "maxCostUsd": 1.5}
    assert tomllib.loads(RunSettings(config=base).config_toml()) == base
    assert s.digest() != RunSettings(config=base).digest()
    (tmp_path / "bad.toml").write_text("gateMood = 1\n")
    with pytest.raises(ConfigError, match="gateMood"):
        load_base_config(tmp_path / "bad.toml")


def test_missing_provider_keys_are_found_before_any_run(tmp_path, monkeypatch):
    from autodev.errors import ProviderSetupError
    from autodev.eval.driver import check_keys

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (tmp_path / "gpt.toml").write_text(
        '[[participants]]\nname = "solo"\nmodel = "openai/gpt-5"\nwrite = true\n'
    )
    (tmp_path / "local.toml").write_text(
        '[[participants]]\nname = "solo"\nmodel = "openai/m"\napi_base = "http://127.0.0.1:9/v1"\nwrite = true\n'
    )
    with pytest.raises(ProviderSetupError, match="OPENAI_API_KEY") as e:
        check_keys([tmp_path / "local.toml", tmp_path / "gpt.toml"])
    assert "gpt.toml" in e.value.message and "local.toml" not in e.value.message and e.value.exit_code == 2
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    check_keys([tmp_path / "gpt.toml"])
