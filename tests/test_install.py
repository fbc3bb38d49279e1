"""The installed command: its distribution name, `--version`, and shell completion for bash and zsh,
each through the real console script and a real shell."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import autodev

# These tests start programs as subprocesses (see the e2e marker in pyproject.toml).
pytestmark = pytest.mark.e2e

BIN = Path(sys.executable).parent
SCRIPT = BIN / "autodev"


def sh(shell: str, script: str, home: Path, **env) -> subprocess.CompletedProcess:
    # `; true` keeps the shell alive as autodev's parent, which is how Typer detects the shell.
    e = {**os.environ, "HOME": str(home), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **env}
    return subprocess.run(
        [shell, "-c", script + "; true"], env=e, capture_output=True, text=True, timeout=60, cwd=home
    )


def test_distribution_is_autodev_team_with_the_autodev_command():
    assert importlib.metadata.version("autodev-team") == autodev.__version__
    dist = importlib.metadata.distribution("autodev-team")
    scripts = {e.name: e.value for e in dist.entry_points if e.group == "console_scripts"}
    # the scripted model's server has its own command: `python -m` needs autodev's own Python
    assert scripts == {"autodev": "autodev.cli:main", "autodev-scripted": "autodev.scripted.__main__:main"}


def test_version_names_the_version_and_the_python():
    r = subprocess.run([str(SCRIPT), "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"autodev {autodev.__version__} (autodev-team) ")
    assert f"Python {platform.python_version()}" in r.stdout
    assert sys.executable in r.stdout


def test_bash_completion_installs_and_completes(tmp_path):
    r = sh("bash", "autodev --show-completion", tmp_path, SHELL="/bin/bash")
    assert "complete -o default -F _autodev_completion autodev" in r.stdout, r.stderr

    r = sh("bash", "autodev --install-completion", tmp_path, SHELL="/bin/bash")
    assert r.returncode == 0 and "bash completion installed" in r.stdout, r.stdout + r.stderr
    script = tmp_path / ".bash_completions" / "autodev.sh"
    assert script.is_file() and "autodev.sh" in (tmp_path / ".bashrc").read_text()
    # A new interactive bash reads .bashrc and has the completer registered.
    r = subprocess.run(
        ["bash", "-i", "-c", "complete -p autodev"],
        env={**os.environ, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "-F _autodev_completion autodev" in r.stdout, r.stdout + r.stderr
    # What bash does on <TAB> after `autodev sta`: call the function, read COMPREPLY.
    r = sh(
        "bash",
        f"source {script}; COMP_WORDS=(autodev sta); COMP_CWORD=1; _autodev_completion autodev; "
        'printf "%s\\n" "${COMPREPLY[@]}"',
        tmp_path,
    )
    assert r.stdout.split() == ["start", "status"], r.stdout + r.stderr


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed (.ci/run installs it)")
def test_zsh_completion_installs_and_registers(tmp_path):
    r = sh("zsh", "autodev --show-completion", tmp_path, SHELL="/bin/zsh")
    assert r.stdout.startswith("#compdef autodev"), r.stdout + r.stderr

    r = sh("zsh", "autodev --install-completion", tmp_path, SHELL="/bin/zsh")
    assert "zsh completion installed" in r.stdout, r.stdout + r.stderr
    assert (tmp_path / ".zfunc" / "_autodev").read_text().startswith("#compdef autodev")
    assert "fpath+=~/.zfunc" in (tmp_path / ".zshrc").read_text()
    # An interactive zsh reading that .zshrc has the completer registered for `autodev`.
    e = {**os.environ, "HOME": str(tmp_path), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    r = subprocess.run(
        ["zsh", "-i", "-c", "print -r -- ${_comps[autodev]}"],
        env=e,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.stdout.strip().splitlines()[-1] == "_autodev", r.stdout + r.stderr


def test_zsh_completion_protocol_offers_commands():
    e = {**os.environ, "_AUTODEV_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "autodev sta"}
    r = subprocess.run([str(SCRIPT)], env=e, capture_output=True, text=True, timeout=60)
    assert '"start":' in r.stdout and '"status":' in r.stdout, r.stdout + r.stderr
