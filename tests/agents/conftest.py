"""Fake agent CLIs on PATH: tests/agents/fake_cli.py installed as claude, codex, copilot, gemini."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

FAKE = Path(__file__).parent / "fake_cli.py"
NAMES = ("claude", "codex", "copilot", "gemini")


class Fakes:
    def __init__(self, root: Path):
        self.bin = root / "bin"
        self.bin.mkdir(parents=True)
        self.scenario = root / "scenario.json"
        self.log = root / "invocations.jsonl"
        self.child = root / "child.pid"
        for name in NAMES:
            # The script's name tells the fake which CLI it is (a link named .claude, ...); the
            # interpreter is the tests' own (it has the mcp SDK), whatever python3 on PATH is.
            link = self.bin / f".{name}"
            link.symlink_to(FAKE)
            exe = self.bin / name
            exe.write_text(f'#!/bin/sh\nexec {sys.executable} {link} "$@"\n')
            exe.chmod(0o755)

    def play(self, **runs: list) -> None:
        self.scenario.write_text(json.dumps(runs))
        for n in self.scenario.parent.glob("scenario.json.*.n"):
            n.unlink()

    def calls(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def env(self) -> dict[str, str]:
        return {
            "PATH": f"{self.bin}{os.pathsep}{os.environ['PATH']}",
            "FAKE_AGENT_SCENARIO": str(self.scenario),
            "FAKE_AGENT_LOG": str(self.log),
            "FAKE_AGENT_CHILD": str(self.child),
        }


@pytest.fixture
def fakes(tmp_path, monkeypatch) -> Fakes:
    f = Fakes(tmp_path / "fakes")
    for k, v in f.env().items():
        monkeypatch.setenv(k, v)
    return f
