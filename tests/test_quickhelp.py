"""`autodev --help` without typer (cli/quickhelp.py) prints what the Typer app prints, byte for
byte, whatever the width, colours and terminal, and steps aside when its capture is stale."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import types

import pytest

from autodev.cli import quickhelp

QUICK = "import sys; sys.argv = ['autodev', '--help']; from autodev.cli import main; main()"
TYPER = "import sys; sys.argv = ['autodev', '--help']; from autodev.cli.full import main; main()"


def test_the_captured_help_is_current():
    key, parts = pickle.loads(quickhelp.DATA.read_bytes())
    assert key == quickhelp._key(), "autodev/cli/help.pickle is stale: run `python -m autodev.cli.quickhelp`"
    assert parts


def _run(code: str, env: dict[str, str]) -> bytes:
    clean = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "NO_COLOR", "TERM")}
    r = subprocess.run([sys.executable, "-c", code], env={**clean, **env}, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


@pytest.mark.e2e
@pytest.mark.parametrize(
    "env",
    [
        {},
        {"COLUMNS": "50"},
        {"COLUMNS": "132"},
        {"FORCE_COLOR": "1", "COLUMNS": "70"},
        {"TERMINAL_WIDTH": "100"},
    ],
)
def test_quick_help_is_the_typer_app_s(env):
    assert _run(QUICK, env) == _run(TYPER, env)


def test_the_console_is_made_as_typer_makes_it():
    import typer.rich_utils as ru

    assert quickhelp.HIGHLIGHTS == ru.OptionHighlighter.highlights
    assert quickhelp.USAGE_STYLE == ru.STYLE_USAGE_COMMAND
    assert quickhelp.THEME == {
        "option": ru.STYLE_OPTION,
        "switch": ru.STYLE_SWITCH,
        "negative_option": ru.STYLE_NEGATIVE_OPTION,
        "negative_switch": ru.STYLE_NEGATIVE_SWITCH,
        "types": ru.STYLE_TYPES,
        "types_sep": ru.STYLE_TYPES_SEPARATOR,
        "usage": ru.STYLE_USAGE,
    }


@pytest.mark.parametrize(
    "argv0, package",
    [
        ("/usr/bin/autodev", None),
        ("/x/autodev/__main__.py", "autodev"),
        ("/x/autodev/cli/__main__.py", "autodev.cli"),
    ],
)
def test_program_name_is_click_s(monkeypatch, argv0, package):
    from typer._click.utils import _detect_program_name

    main = types.ModuleType("__main__")
    main.__package__ = package
    monkeypatch.setattr(sys, "argv", [argv0, "--help"])
    assert quickhelp.program_name(main) == _detect_program_name(_main=main)


def test_a_stale_capture_leaves_the_help_to_typer(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "help.pickle"
    stale.write_bytes(pickle.dumps(("another key", [])))
    monkeypatch.setattr(quickhelp, "DATA", stale)
    assert quickhelp.show() is False
    assert capsys.readouterr().out == ""


SEEN = (
    "import sys; sys.argv = ['autodev', '--help']\n"
    "from autodev.cli import main\n"
    "try:\n    main()\n"
    "except SystemExit:\n    pass\n"
    "print(sorted(m for m in sys.modules if m == 'rich' or m.startswith('rich.')), file=sys.stderr)"
)


def _run_seen(env: dict[str, str]) -> tuple[bytes, str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "NO_COLOR", "TERM")}
    r = subprocess.run([sys.executable, "-c", SEEN], env={**clean, **env}, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout, r.stderr.decode().strip().splitlines()[-1]


@pytest.mark.e2e
def test_a_second_help_in_the_same_terminal_prints_the_kept_rendering_without_rich(tmp_path):
    home = {"AUTODEV_HOME": str(tmp_path / "home")}
    for env in ({"COLUMNS": "60", **home}, {"FORCE_COLOR": "1", "COLUMNS": "90", **home}):
        typer_s = _run(TYPER, env)
        first, rich_first = _run_seen(env)
        second, rich_second = _run_seen(env)
        assert first == second == typer_s
        assert "rich.console" in rich_first  # rendered by rich, then kept
        assert rich_second == "[]"  # printed from help.json: rich never imported
    kept = json.loads((tmp_path / "home" / "help.json").read_text())
    assert len(kept) == 2  # one rendering per terminal


@pytest.mark.e2e
def test_a_cut_or_foreign_memo_only_costs_a_rendering(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {"AUTODEV_HOME": str(home), "COLUMNS": "72"}
    for junk in ('{"entries": [1, 2', "[1, 2, 3]", '{"x": 5}'):
        (home / "help.json").write_text(junk)
        out, seen = _run_seen(env)
        assert out == _run(TYPER, env)
        assert "rich.console" in seen
    assert isinstance(json.loads((home / "help.json").read_text()), dict)
