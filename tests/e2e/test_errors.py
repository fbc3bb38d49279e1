"""Bad configuration through the real CLI: a clear message naming the file and the key, exit 2,
and nothing written on the machine side (the run directory is never created). `start` refuses
before any daemon: the refusals run in-process (`inproc`); one runs through the console script."""

from __future__ import annotations

import pytest

from tests.conftest import run_dir, write_team
from tests.e2e.helpers import BUILDER as TEAM

SCRIPT = """
[[step]]
participant = "builder"
calls = [{ tool = "post", args = { kind = "done", text = "done" } }]
[[step]]
participant = "audit"
calls = [{ tool = "verdict", args = { accept = true, gap = "" } }]
"""


def start(run, repo):
    """`start --foreground --until-idle` through `run`: the `autodev` or the `inproc` fixture."""
    return run(repo, "start", "--foreground", "--until-idle", "an objective", timeout=60)


def assert_refused(r, *needles: str) -> None:
    """Exit 2, every needle on stderr, and no traceback."""
    assert r.returncode == 2, f"exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    for n in needles:
        assert n in r.stderr, f"{n!r} not in stderr:\n{r.stderr}"
    assert "Traceback" not in r.stderr, r.stderr


# Each case: (team, config, what stderr must name). Every one of them must stop `start` before
# anything is written.
CASES = {
    "unknown config key": (TEAM, "maxTalkTurn = 3\n", [".autodev/config.toml", "maxTalkTurn"]),
    "config key of the wrong type": (
        TEAM,
        'maxTalkTurns = "six"\n',
        [".autodev/config.toml", "maxTalkTurns"],
    ),
    # Once an OverflowError at every command: numbers have upper bounds, and the error says them.
    "config number beyond its bound": (
        TEAM,
        "commandTimeoutSec = 1e10\n",
        [".autodev/config.toml", "commandTimeoutSec", "at most 86400"],
    ),
    "config number not finite": (TEAM, "turnTimeoutMin = inf\n", ["turnTimeoutMin", "at most 1440"]),
    "config enum out of range": (TEAM, 'gateMode = "sometimes"\n', [".autodev/config.toml", "gateMode"]),
    "config TOML syntax error": (TEAM, "maxTalkTurns = 3\ngateMode = \n", [".autodev/config.toml", "line 2"]),
    "team TOML syntax error": (
        TEAM.replace("write = true", "write = tru e"),
        "",
        [".autodev/team.toml", "line 5"],
    ),
    "bad participant name": (
        TEAM.replace('name = "builder"', 'name = "Builder!"'),
        "",
        [".autodev/team.toml", "name", "Builder!"],
    ),
    "reserved participant name": (
        TEAM.replace('name = "builder"', 'name = "audit"'),
        "",
        [".autodev/team.toml", "audit"],
    ),
    "unknown participant key": (
        TEAM.replace("write = true", 'write = true\nmodle = "x"'),
        "",
        [".autodev/team.toml", "modle"],
    ),
    "participant without a model": (
        TEAM.replace('model = "scripted"\nwrite', "write"),
        "",
        [".autodev/team.toml", "model"],
    ),
    "duplicate participant": (
        TEAM + '\n[[participants]]\nname = "builder"\nmodel = "scripted"\n',
        "",
        [".autodev/team.toml", "builder"],
    ),
    "missing script": (
        TEAM.replace('path = "script.toml"', 'path = "nope.toml"'),
        "",
        [".autodev/team.toml", "nope.toml"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_configuration_is_refused_before_anything_is_written(repo, inproc, case):
    team, config, needles = CASES[case]
    write_team(repo, team, SCRIPT, config)
    r = start(inproc, repo)
    assert_refused(r, *needles)
    assert not run_dir(repo).exists()


def test_missing_team_file_names_autodev_init(repo, autodev):
    """Through the console script, as a process: the refusal at the real entry point."""
    r = start(autodev, repo)
    assert_refused(r, "team.toml", "autodev init")
    assert not run_dir(repo).exists()


@pytest.mark.full
def test_provider_without_its_api_key_is_refused(repo, inproc, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    team = TEAM.replace('model = "scripted"\nwrite', 'model = "openai/gpt-5"\nwrite', 1)
    write_team(repo, team, SCRIPT)
    r = start(inproc, repo)
    assert_refused(r, "builder", "OPENAI_API_KEY")
    assert not run_dir(repo).exists()


def test_api_key_env_naming_an_unset_variable_is_refused(repo, inproc, monkeypatch):
    monkeypatch.delenv("AUTODEV_TEST_NO_SUCH_KEY", raising=False)
    team = TEAM.replace(
        'model = "scripted"\nwrite',
        'model = "openai/gpt-5"\napi_key_env = "AUTODEV_TEST_NO_SUCH_KEY"\nwrite',
        1,
    )
    write_team(repo, team, SCRIPT)
    r = start(inproc, repo)
    assert_refused(r, "builder", "AUTODEV_TEST_NO_SUCH_KEY", "api_key_env")
    assert not run_dir(repo).exists()


def test_malformed_script_is_refused_before_anything_is_written(repo, inproc):
    # The script is part of a scripted team's configuration: checked as early as the team.
    write_team(repo, TEAM, SCRIPT + '[[step]]\nparticipant = "builder"\nbogus = 1\n')
    r = start(inproc, repo)
    assert_refused(r, "script.toml", "bogus")
    assert not run_dir(repo).exists()


@pytest.mark.full
def test_a_valid_configuration_still_runs(repo, autodev):
    """The control case for the tests above: the same files, uncorrupted, complete the run."""
    write_team(repo, TEAM, SCRIPT, "maxTalkTurns = 3\n")
    r = start(autodev, repo)
    assert r.returncode == 0, r.stdout + r.stderr
    assert run_dir(repo).exists()
