"""The scripted server has a command of its own (`autodev-scripted`), since `python -m
autodev.scripted` needs autodev's own Python, which a pipx or uv tool install hides; `autodev
--help` names the command that works."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_declares_the_command():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["autodev-scripted"] == "autodev.scripted.__main__:main"
    from autodev.scripted.__main__ import main

    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0


@pytest.mark.e2e
def test_the_installed_command_serves_and_autodev_help_names_it(tmp_path, inproc):
    exe = Path(sys.executable).parent / "autodev-scripted"  # beside `autodev`, as pipx puts both
    assert exe.exists(), "reinstall autodev (make install) to get its console scripts"
    r = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("usage: autodev-scripted "), r.stdout + r.stderr
    out = inproc(tmp_path, "--help", env={"COLUMNS": "200"}).stdout
    assert "autodev-scripted SCRIPT.toml" in out and "python -m autodev.scripted" not in out
