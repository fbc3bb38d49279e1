"""The `agent` keys of a participant (SPEC §16): what loads, and the errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from autodev.config import load_team
from autodev.errors import ConfigError


def team_file(tmp_path: Path, participant: str, rest: str = "") -> Path:
    p = tmp_path / ".autodev" / "team.toml"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(f'[[participants]]\nname = "builder"\n{participant}\n{rest}')
    return p


def refused(path: Path) -> str:
    with pytest.raises(ConfigError) as e:
        load_team(path)
    return f"{e.value.message} {e.value.fix}"


def test_an_agent_participant_with_its_model_args_and_a_mixed_failover(tmp_path):
    t = load_team(
        team_file(
            tmp_path,
            'agent = "codex"\nmodel = "gpt-5-codex"\neffort = "high"\nagent_args = ["--x"]\n'
            'agent_permission = "auto"\nfailover = ["agent:claude", "openai/gpt-5"]\nwrite = true',
        )
    )
    p = t.participants[0]
    assert p.agents() == ["codex", "claude"] and p.models() == ["openai/gpt-5"]
    assert t.audit_model().model == "openai/gpt-5"


def test_neither_model_nor_agent_is_refused_with_both_fixes(tmp_path):
    msg = refused(team_file(tmp_path, "write = true"))
    assert "neither model nor agent" in msg and 'agent = "claude"' in msg


def test_an_unknown_agent_and_a_bad_failover_entry_are_named(tmp_path):
    assert "agent" in refused(team_file(tmp_path, 'agent = "cursor"'))
    msg = refused(team_file(tmp_path, 'agent = "claude"\nfailover = ["agent:cursor"]'))
    assert "failover[0]" in msg and "agent:codex" in msg


def test_agent_keys_without_agent_are_refused(tmp_path):
    assert "need agent" in refused(team_file(tmp_path, 'model = "openai/gpt-5"\nagent_args = ["-v"]'))
    assert "is a model" in refused(team_file(tmp_path, 'model = "openai/gpt-5"\nfailover = ["agent:codex"]'))


def test_a_team_of_agents_only_needs_an_audit_table_for_the_audit(tmp_path):
    t = load_team(team_file(tmp_path, 'agent = "claude"'))
    assert t.key_names() == []
    with pytest.raises(ConfigError) as e:
        t.audit_model()
    assert "[audit]" in e.value.fix


@pytest.mark.e2e
def test_start_and_doctor_refuse_a_team_of_agents_without_an_audit_table(repo, inproc):
    from tests.conftest import write_team

    write_team(repo, '[[participants]]\nname = "builder"\nagent = "claude"\nwrite = true\n')
    r = inproc(repo, "start", "add hello.txt")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "every participant is an agent CLI" in r.stderr and "[audit]" in r.stderr
    assert "daemon started" not in r.stdout
    d = inproc(repo, "doctor")
    assert d.returncode == 2 and "[audit]" in d.stdout + d.stderr
    write_team(
        repo, '[[participants]]\nname = "builder"\nagent = "claude"\n\n[audit]\nmodel = "openai/gpt-5"\n'
    )
    d = inproc(repo, "doctor")
    assert "every participant is an agent CLI" not in d.stdout + d.stderr
