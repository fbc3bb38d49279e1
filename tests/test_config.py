"""config.toml / team.toml: loading, error messages in TOML terms, docs, provider checks."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from autodev.config import (
    AuditConfig,
    Participant,
    RunConfig,
    Team,
    config_markdown,
    config_rows,
    load_config,
    load_team,
    provider_problems,
)
from autodev.errors import ConfigError
from autodev.store.paths import shipped

ROOT = Path(__file__).resolve().parent.parent

# A value for every key, each different from its default, so a key read by the wrong name
# (or not at all) shows up as a default.
EVERY_KEY = {
    "gateMode": "auto",
    "gateOpaque": "allow",
    "gateAutoApprove": ["pip install *"],
    "gateAutoDeny": ["*--force*"],
    "gateRequired": ["git push*"],
    "gateRequiredTools": ["github__merge_*"],
    "waitFirstSec": 0.05,
    "waitCapSec": 0.4,
    "maxWaitMin": 2.5,
    "maxAcceptChecks": 5,
    "maxTalkTurns": 9,
    "maxStepsPerTurn": 7,
    "turnTimeoutMin": 1.5,
    "commandTimeoutSec": 30,
    "agentsGated": True,
    "auditCheck": "pytest -q",
    "sandbox": "off",
    "commandNetwork": True,
    "sandboxExpose": ["~/.cargo"],
    "sandboxRead": ["~/.pyenv"],
    "secretFiles": [".env"],
    "networkAllow": ["docs.python.org"],
    "maxRetries": 0,
    "retryBackoffSec": 0.01,
    "maxSilentTurns": 2,
    "auditDiffChars": 500,
    "testCommand": "python3 -m pytest -q",
    "testTimeoutSec": 60,
    "doneEvidence": "required",
    "maxCostUsd": 2.5,
    "maxTokens": 100000,
    "maxOutputTokens": 2048,
    "notifyCommand": "notify-send autodev",
    "notifyUrl": "http://127.0.0.1:9000/hook",
    "notifyTimeoutSec": 3,
    "hooks": [
        {"on": "after_tool", "command": "ruff check .", "match": "write_*", "timeout_sec": 60, "host": True}
    ],
    "telemetry": {
        "enabled": False,
        "endpoint": "http://127.0.0.1:4318",
        "captureContent": True,
        "queueSize": 8,
        "exportTimeoutSec": 1.5,
    },
}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def toml_of(mapping: dict) -> str:
    import tomli_w

    return tomli_w.dumps(mapping)


def config_error(path: Path, loader=load_config) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        loader(path)
    return info.value


# --- config.toml -----------------------------------------------------------------------------


def test_every_key_loads_by_its_alias(tmp_path):
    path = write(tmp_path / ".autodev" / "config.toml", toml_of(EVERY_KEY))
    cfg = load_config(path)
    by_alias = {info.alias: getattr(cfg, name) for name, info in RunConfig.model_fields.items()}
    assert set(by_alias) == set(EVERY_KEY), "EVERY_KEY must list every field"
    by_alias["hooks"] = [h.model_dump(by_alias=True) for h in by_alias["hooks"]]
    by_alias["telemetry"] = by_alias["telemetry"].model_dump(by_alias=True)
    for key, value in EVERY_KEY.items():
        assert by_alias[key] == value, key
        assert by_alias[key] != RunConfig.model_fields[
            next(n for n, i in RunConfig.model_fields.items() if i.alias == key)
        ].get_default(call_default_factory=True), f"{key}: test value must differ from default"


def test_a_bad_hook_is_named_with_its_table(tmp_path):
    path = write(tmp_path / ".autodev" / "config.toml", '[[hooks]]\non = "before_tools"\ncommand = "x"\n')
    err = config_error(path)
    assert err.message.startswith(".autodev/config.toml: hooks[0].on: must be one of before_tool,")
    assert "before_tool" in err.fix


def test_missing_config_file_means_defaults(tmp_path):
    cfg = load_config(tmp_path / ".autodev" / "config.toml")
    assert cfg == RunConfig()
    assert cfg.gate_mode == "gated" and cfg.wait_first_sec == 30 and cfg.wait_cap_sec == 480
    assert cfg.gate_required == [
        "git push*",
        "rm -rf *",
        "git clean -f*",
        "git reset --hard*",
        "git checkout -- *",
        *HISTORY_GATED,
    ]
    assert cfg.gate_opaque == "gated"
    assert cfg.max_talk_turns == 6 and cfg.max_accept_checks == 3


def test_unknown_key_is_named_with_a_suggestion(tmp_path):
    path = write(tmp_path / ".autodev" / "config.toml", 'gateMod = "auto"\n')
    err = config_error(path)
    assert err.message == '.autodev/config.toml: unknown key "gateMod"'
    assert err.fix == 'did you mean "gateMode"?'


def test_unknown_key_without_a_close_match_lists_the_known_keys(tmp_path):
    path = write(tmp_path / ".autodev" / "config.toml", "zzz = 1\n")
    err = config_error(path)
    assert 'unknown key "zzz"' in err.message
    assert "gateMode" in err.fix and "auditDiffChars" in err.fix


def test_wrong_type_names_the_key_and_the_value(tmp_path):
    path = write(tmp_path / ".autodev" / "config.toml", 'maxTalkTurns = "3"\n')
    err = config_error(path)
    assert err.message == '.autodev/config.toml: maxTalkTurns: must be a whole number (got "3")'
    assert "maxTalkTurns = 6" in err.fix


def test_out_of_range_values_are_refused(tmp_path):
    path = write(tmp_path / ".autodev" / "config.toml", "waitFirstSec = 0\n")
    assert "waitFirstSec: must be greater than 0 (got 0)" in config_error(path).message
    write(path, "maxAcceptChecks = 0\n")
    assert "maxAcceptChecks: must be at least 1 (got 0)" in config_error(path).message
    write(path, "waitFirstSec = 60\nwaitCapSec = 10\n")
    assert "waitCapSec (10) is below waitFirstSec (60)" in config_error(path).message


def test_gate_mode_choices(tmp_path):
    path = write(tmp_path / ".autodev" / "config.toml", 'gateMode = "sometimes"\n')
    err = config_error(path)
    assert err.message == ('.autodev/config.toml: gateMode: must be one of gated, auto (got "sometimes")')


def test_several_problems_are_all_reported(tmp_path):
    path = write(tmp_path / ".autodev" / "config.toml", 'gateMod = "auto"\nmaxTalkTurns = -1\n')
    err = config_error(path)
    assert err.message.startswith(".autodev/config.toml: 2 problems")
    assert 'unknown key "gateMod"' in err.message and 'did you mean "gateMode"?' in err.message
    assert "maxTalkTurns: must be at least 1" in err.message


def test_toml_syntax_error_names_the_line(tmp_path):
    path = write(tmp_path / ".autodev" / "config.toml", 'gateMode = "auto"\nmaxTalkTurns = = 3\n')
    err = config_error(path)
    assert err.message.startswith(".autodev/config.toml: TOML syntax error")
    assert "line 2" in err.message


def test_fractional_seconds_are_allowed_from_python():
    cfg = RunConfig(wait_first_sec=0.05, wait_cap_sec=0.2)
    assert cfg.wait_first_sec == 0.05 and cfg.wait_cap_sec == 0.2


# history rewrites and branch switches (issue 20): credit counts commits on the run's branch
HISTORY_GATED = [
    "git reset --soft*",
    "git reset --mixed*",
    "git reset --keep*",
    "git reset --merge*",
    "git commit --amend*",
    "git rebase*",
    "git filter-branch*",
    "git filter-repo*",
    "git update-ref*",
    "git replace*",
    "git branch -f*",
    "git branch -M*",
    "git checkout --orphan*",
    "git checkout -b*",
    "git checkout -B*",
    "git checkout --detach*",
    "git switch*",
]


def test_config_rows_cover_every_field():
    cfg = RunConfig(gate_mode="auto", max_talk_turns=2)
    rows = config_rows(cfg)
    keys = [r[0] for r in rows]
    assert keys == [info.alias for info in RunConfig.model_fields.values()]
    by_key = {r[0]: r for r in rows}
    assert by_key["gateMode"][1:3] == ('"auto"', '"gated"')
    assert by_key["maxTalkTurns"][1:3] == ("2", "6")
    assert by_key["gateRequired"][2] == (
        '["git push*", "rm -rf *", "git clean -f*", "git reset --hard*", "git checkout -- *", '
        + ", ".join(f'"{p}"' for p in HISTORY_GATED)
        + "]"
    )
    assert all(r[3] for r in rows), "every key needs a meaning"
    # every default row must be valid TOML that loads back to the default
    parsed = tomllib.loads("\n".join(f"{k} = {d}" for k, _c, d, _m in rows))
    assert RunConfig.model_validate(parsed) == RunConfig()


def test_docs_config_md_is_in_sync():
    doc = (ROOT / "docs" / "CONFIG.md").read_text()
    assert doc == config_markdown(), "regenerate: python -m autodev.config > docs/CONFIG.md"
    for info in [*RunConfig.model_fields.values()]:
        assert f"`{info.alias}`" in doc
    for name in [*Participant.model_fields, *AuditConfig.model_fields]:
        assert f"`{name}`" in doc


def test_example_config_lists_every_key_commented_with_its_default():
    text = (shipped("autodev.example") / "config.toml").read_text()
    assert tomllib.loads(text) == {}, "the example must change nothing until edited"
    lines = [line[2:] for line in text.splitlines() if re.match(r"^# [A-Za-z]+ = ", line)]
    parsed = tomllib.loads("\n".join(lines))
    assert set(parsed) == {info.alias for info in RunConfig.model_fields.values()}
    assert RunConfig.model_validate(parsed) == RunConfig()


# --- team.toml -------------------------------------------------------------------------------

PAIR = """
[[participants]]
name = "builder"
model = "anthropic/claude-sonnet-4-5"
effort = "high"
write = true
lane = "builds"
failover = ["openai/gpt-5-mini"]

[[participants]]
name = "reviewer"
model = "openai/gpt-5"
lane = "reviews"

[audit]
model = "openai/gpt-5"
"""


def test_team_loads_with_defaults_and_helpers(tmp_path):
    team = load_team(write(tmp_path / ".autodev" / "team.toml", PAIR))
    assert team.names() == ["builder", "reviewer"]
    assert team.get("builder").write is True and team.get("reviewer").write is False
    assert team.get("reviewer").effort is None and team.get("reviewer").failover == []
    assert team.get("builder").models() == ["anthropic/claude-sonnet-4-5", "openai/gpt-5-mini"]
    assert team.audit_model().model == "openai/gpt-5"
    assert not team.uses_scripted()
    with pytest.raises(KeyError):
        team.get("nobody")


def test_audit_defaults_to_first_participant():
    team = Team(
        participants=[
            Participant(
                name="solo",
                model="openai/gpt-5",
                effort="low",
                api_base="http://127.0.0.1:9",
                api_key_env="MY_KEY",
            ),
            Participant(name="other", model="anthropic/claude-sonnet-4-5"),
        ]
    )
    audit = team.audit_model()
    assert (audit.model, audit.effort, audit.api_base, audit.api_key_env) == (
        "openai/gpt-5",
        "low",
        "http://127.0.0.1:9",
        "MY_KEY",
    )


def test_missing_team_file_says_run_init(tmp_path):
    err = config_error(tmp_path / ".autodev" / "team.toml", load_team)
    assert err.message == ".autodev/team.toml not found"
    assert "autodev init" in err.fix


def test_wrong_effort_names_the_key_path(tmp_path):
    text = PAIR + '\n[[participants]]\nname = "tester"\nmodel = "openai/gpt-5"\neffort = "extreme"\n'
    err = config_error(write(tmp_path / ".autodev" / "team.toml", text), load_team)
    assert err.message == (
        '.autodev/team.toml: participants[2].effort (participant "tester"): '
        'must be one of low, medium, high (got "extreme")'
    )
    assert "low, medium, high" in err.fix


def test_wrong_type_in_team_names_the_key_path(tmp_path):
    text = PAIR.replace("write = true", 'write = "yes"')
    err = config_error(write(tmp_path / ".autodev" / "team.toml", text), load_team)
    assert err.message == (
        '.autodev/team.toml: participants[0].write (participant "builder"): must be true or false (got "yes")'
    )


def test_misspelt_team_key_gets_a_suggestion_and_no_redundant_missing(tmp_path):
    text = '[[participants]]\nname = "builder"\nmodle = "openai/gpt-5"\n'
    err = config_error(write(tmp_path / ".autodev" / "team.toml", text), load_team)
    assert err.message == (
        '.autodev/team.toml: unknown key "modle" in participants[0] (participant "builder")'
    )
    assert err.fix == 'did you mean "model"?'


def test_team_syntax_error_names_the_line(tmp_path):
    text = '[[participants]]\nname = "builder"\nmodel = openai/gpt-5\n'
    err = config_error(write(tmp_path / ".autodev" / "team.toml", text), load_team)
    assert "TOML syntax error" in err.message and "line 3" in err.message


@pytest.mark.parametrize("name", ["builder", "b", "a1_b-c", "x" * 32])
def test_valid_names(name):
    assert Participant(name=name, model="openai/gpt-5").name == name


@pytest.mark.parametrize("name", ["Builder", "1abc", "", "-x", "x" * 33, "has space", "é"])
def test_invalid_names(tmp_path, name):
    text = f'[[participants]]\nname = "{name}"\nmodel = "openai/gpt-5"\n'
    err = config_error(write(tmp_path / "team.toml", text), load_team)
    assert "participants[0].name" in err.message and "not a valid participant name" in err.message


@pytest.mark.parametrize("name", ["user", "system", "audit"])
def test_reserved_names(tmp_path, name):
    text = f'[[participants]]\nname = "{name}"\nmodel = "openai/gpt-5"\n'
    err = config_error(write(tmp_path / "team.toml", text), load_team)
    assert "reserved" in err.message and f'"{name}"' in err.message


def test_duplicate_names(tmp_path):
    text = PAIR.replace('name = "reviewer"', 'name = "builder"')
    err = config_error(write(tmp_path / "team.toml", text), load_team)
    assert 'name "builder" is used by participants[0] and participants[1]' in err.message


def test_empty_team(tmp_path):
    err = config_error(write(tmp_path / "team.toml", "participants = []\n"), load_team)
    assert "participants: must not be empty" in err.message
    err = config_error(write(tmp_path / "team.toml", '[audit]\nmodel = "openai/gpt-5"\n'), load_team)
    assert "missing [[participants]]" in err.message


def test_empty_model(tmp_path):
    text = '[[participants]]\nname = "a"\nmodel = ""\n'
    err = config_error(write(tmp_path / "team.toml", text), load_team)
    assert "participants[0].model" in err.message and "must not be empty" in err.message


def test_scripted_needs_a_scripted_section(tmp_path):
    text = '[[participants]]\nname = "a"\nmodel = "scripted"\n'
    err = config_error(write(tmp_path / "team.toml", text), load_team)
    assert "[scripted]" in err.message and "[scripted]" in err.fix


def test_scripted_audit_alone_also_needs_the_section(tmp_path):
    text = '[[participants]]\nname = "a"\nmodel = "openai/gpt-5"\n[audit]\nmodel = "scripted"\n'
    err = config_error(write(tmp_path / "team.toml", text), load_team)
    assert "no [scripted] table" in err.message


def test_scripted_script_must_exist(tmp_path):
    text = (
        '[[participants]]\nname = "a"\nmodel = "openai/gpt-5"\n'
        'failover = ["scripted"]\n[scripted]\npath = "steps.toml"\n'
    )
    team_file = write(tmp_path / ".autodev" / "team.toml", text)
    err = config_error(team_file, load_team)
    assert "steps.toml" in err.message and "does not exist" in err.message
    write(tmp_path / ".autodev" / "steps.toml", "")
    team = load_team(team_file)
    assert team.uses_scripted()
    assert team.script_path(team_file) == (tmp_path / ".autodev" / "steps.toml").resolve()


@pytest.mark.parametrize("name", ["solo", "pair", "trio"])
def test_shipped_teams_load(name):
    team = load_team(shipped("teams") / f"{name}.toml")
    assert team.audit is not None
    assert any(p.write for p in team.participants), "a team needs someone who can write"
    assert all(p.lane for p in team.participants)
    assert not team.uses_scripted()


def test_shipped_team_sizes():
    sizes = {n: len(load_team(shipped("teams") / f"{n}.toml").participants) for n in ("solo", "pair", "trio")}
    assert sizes == {"solo": 1, "pair": 2, "trio": 3}


def test_example_team_loads_and_matches_pair():
    example = load_team(shipped("autodev.example") / "team.toml")
    pair = load_team(shipped("teams") / "pair.toml")
    assert example == pair


# --- provider checks -------------------------------------------------------------------------

PROVIDER_VARS = [
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "MY_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
]


@pytest.fixture
def clean_env(monkeypatch):
    for var in PROVIDER_VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def one(model: str, **kw) -> Team:
    return Team(participants=[Participant(name="builder", model=model, **kw)])


def test_missing_provider_key_is_named(clean_env):
    import os

    problems = provider_problems(one("openai/gpt-5"), os.environ)
    assert problems == [
        'participant "builder" (model openai/gpt-5) needs OPENAI_API_KEY; set it in the '
        "environment or set api_key_env in .autodev/team.toml"
    ]


def test_provider_key_present(clean_env):
    import os

    clean_env.setenv("OPENAI_API_KEY", "sk-test")
    assert provider_problems(one("openai/gpt-5"), os.environ) == []


def test_api_key_env_must_be_set(clean_env):
    import os

    clean_env.setenv("OPENAI_API_KEY", "sk-test")  # the usual variable does not stand in
    team = one("openai/gpt-5", api_key_env="MY_KEY")
    problems = provider_problems(team, os.environ)
    assert len(problems) == 1 and "MY_KEY" in problems[0] and "OPENAI_API_KEY" not in problems[0]
    clean_env.setenv("MY_KEY", "k")
    assert provider_problems(team, os.environ) == []


def test_api_key_env_is_read_from_the_given_environ(clean_env):
    team = one("openai/gpt-5", api_key_env="MY_KEY")
    assert provider_problems(team, {"MY_KEY": "k"}) == []
    assert "MY_KEY" in provider_problems(team, {})[0]


def test_api_base_needs_no_key(clean_env):
    import os

    team = one("openai/local-model", api_base="http://127.0.0.1:8000/v1")
    assert provider_problems(team, os.environ) == []


def test_scripted_needs_nothing(clean_env):
    import os

    team = Team(
        participants=[Participant(name="a", model="scripted")],
        audit=AuditConfig(model="scripted"),
        scripted={"path": "s.toml"},
    )
    assert provider_problems(team, os.environ) == []


def test_failover_and_audit_models_are_checked(clean_env):
    import os

    clean_env.setenv("ANTHROPIC_API_KEY", "k")
    team = Team(
        participants=[
            Participant(name="builder", model="anthropic/claude-sonnet-4-5", failover=["openai/gpt-5-mini"])
        ],
        audit=AuditConfig(model="gemini/gemini-2.5-pro"),
    )
    problems = provider_problems(team, os.environ)
    assert len(problems) == 2
    assert "failover" in problems[0] and "openai/gpt-5-mini" in problems[0]
    assert "OPENAI_API_KEY" in problems[0]
    assert problems[1].startswith("the audit (model gemini/gemini-2.5-pro) needs ")
    assert "GEMINI_API_KEY" in problems[1] and " or " in problems[1]
    clean_env.setenv("GEMINI_API_KEY", "g")
    clean_env.setenv("OPENAI_API_KEY", "o")
    assert provider_problems(team, os.environ) == []


def test_unknown_provider_is_reported(clean_env):
    import os

    problems = provider_problems(one("not-a-provider/thing"), os.environ)
    assert len(problems) == 1 and "does not recognise the provider" in problems[0]


def test_failover_uses_the_participants_key_variable(clean_env):
    # the harness reaches failover models with the participant's api_key_env, so the check does too
    team = one("openai/gpt-5", api_key_env="MY_KEY", failover=["anthropic/claude-sonnet-4-5"])
    problems = provider_problems(team, {})
    assert len(problems) == 2 and all("MY_KEY" in p for p in problems)
    assert not any("ANTHROPIC_API_KEY" in p for p in problems)
    assert provider_problems(team, {"MY_KEY": "k"}) == []


def test_failover_behind_a_local_endpoint_needs_no_key(clean_env):
    team = one("openai/big", api_base="http://127.0.0.1:8000/v1", failover=["openai/small"])
    assert provider_problems(team, {}) == []
