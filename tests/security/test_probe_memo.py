"""`status` reuses the last sandbox probe's answer while nothing it depends on changed (issue 33:
the probe runs bwrap, about 17 ms of a cold status); `start` always probes."""

import os
from pathlib import Path

import pytest

from autodev.guard import bwrap, sandbox


def _bwrap(tmp_path: Path, code: int) -> tuple[Path, Path]:
    """A stand-in for the bwrap binary (the outermost boundary: an external program) that
    counts its runs and exits `code`."""
    runs = tmp_path / "runs"
    binary = tmp_path / "bwrap"
    binary.write_text(f'#!/bin/sh\necho run >> "{runs}"\necho "no namespaces" >&2\nexit {code}\n')
    binary.chmod(0o755)
    return binary, runs


def _count(runs: Path) -> int:
    return len(runs.read_text().splitlines()) if runs.exists() else 0


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(bwrap, "_probed", {})  # the per-process memo would answer first


def test_second_probe_is_answered_from_the_memo(tmp_path, fresh, monkeypatch):
    binary, runs = _bwrap(tmp_path, 1)
    memo = tmp_path / "sandbox-probe.json"
    first = bwrap.remembered_probe(str(binary), memo)
    assert "no namespaces" in first and _count(runs) == 1
    monkeypatch.setattr(bwrap, "_probed", {})  # a new process
    assert bwrap.remembered_probe(str(binary), memo) == first
    assert _count(runs) == 1


def test_a_changed_binary_is_probed_again(tmp_path, fresh, monkeypatch):
    binary, runs = _bwrap(tmp_path, 1)
    memo = tmp_path / "sandbox-probe.json"
    assert bwrap.remembered_probe(str(binary), memo)
    binary.write_text(f'#!/bin/sh\necho run >> "{runs}"\nexit 0\n')  # the user fixed it
    monkeypatch.setattr(bwrap, "_probed", {})
    assert bwrap.remembered_probe(str(binary), memo) == ""
    assert _count(runs) == 2


def test_a_damaged_memo_is_probed_again(tmp_path, fresh):
    binary, runs = _bwrap(tmp_path, 0)
    memo = tmp_path / "sandbox-probe.json"
    memo.write_text('{"key": ')  # cut by a crash
    assert bwrap.remembered_probe(str(binary), memo) == ""
    assert _count(runs) == 1 and '"why": ""' in memo.read_text()


def test_start_always_probes(tmp_path, fresh, monkeypatch):
    binary, runs = _bwrap(tmp_path, 0)
    monkeypatch.setenv(bwrap.BWRAP_ENV, str(binary))
    memo = tmp_path / "sandbox-probe.json"
    assert sandbox.resolve("auto", memo=memo).binary == str(binary)
    monkeypatch.setattr(bwrap, "_probed", {})
    assert sandbox.resolve("auto").binary == str(binary)  # no memo: start's path
    assert _count(runs) == 2


def test_the_key_follows_the_user_namespace_switches(tmp_path, monkeypatch):
    binary, _ = _bwrap(tmp_path, 0)
    switch = tmp_path / "max_user_namespaces"
    switch.write_text("100\n")
    monkeypatch.setattr(bwrap, "USERNS_SWITCHES", (str(switch),))
    before = bwrap.probe_key(str(binary))
    switch.write_text("0\n")
    assert before is not None and bwrap.probe_key(str(binary)) != before
    assert bwrap.probe_key(str(tmp_path / "gone")) is None
    os.utime(binary, ns=(0, 0))
    assert bwrap.probe_key(str(binary)) not in (before, None)
