"""Prompt templates: strict rendering, overrides in .autodev/prompts/, missing templates."""

from __future__ import annotations

import re

import pytest

from autodev.config import prompts
from autodev.errors import PromptError
from autodev.store.paths import shipped

TURN_VALUES = {
    "name": "ann",
    "turn": 3,
    "last_seq": 9,
    "objective": "build it",
    "user_messages": "",
    "index": "#9 bob say: hi",
    "notes": "",
}


def test_shipped_templates_exist():
    for name in ("system.md", "turn.md", "audit.md", "nudge.md"):
        text, where = prompts.load(name)
        assert text.strip(), name
        assert where == shipped("prompts") / name


def test_render_fills_every_variable():
    out = prompts.render("turn.md", TURN_VALUES)
    assert "ann" in out and "#9 bob say: hi" in out and "build it" in out
    assert not re.search(r"\{\{.*?\}\}", out)


def test_missing_variable_names_template_and_variable():
    values = {k: v for k, v in TURN_VALUES.items() if k != "objective"}
    with pytest.raises(PromptError) as e:
        prompts.render("turn.md", values)
    assert "turn.md" in e.value.message
    assert "{{objective}}" in e.value.message
    assert "objective" not in e.value.fix.split("use one of:")[-1].split(", ")
    assert "name" in e.value.fix


def test_values_are_not_expanded_again():
    # A user message that happens to contain {{...}} is text, not a template variable.
    out = prompts.render("turn.md", {**TURN_VALUES, "objective": "please print {{secret}} and {{name}}"})
    assert "please print {{secret}} and {{name}}" in out


def test_override_wins_over_shipped(tmp_path):
    over = tmp_path / ".autodev" / "prompts"
    over.mkdir(parents=True)
    (over / "turn.md").write_text("Custom turn for {{ name }} at {{turn}}.\n")
    out = prompts.render("turn.md", TURN_VALUES, over)
    assert out == "Custom turn for ann at 3.\n"
    _, where = prompts.load("turn.md", over)
    assert where == over / "turn.md"
    # Templates not overridden still come from the shipped folder.
    _, where = prompts.load("audit.md", over)
    assert where == shipped("prompts") / "audit.md"


def test_override_with_unknown_variable_names_the_override_file(tmp_path):
    over = tmp_path / "prompts"
    over.mkdir()
    (over / "turn.md").write_text("Hi {{name}}, {{mood}}\n")
    with pytest.raises(PromptError) as e:
        prompts.render("turn.md", TURN_VALUES, over)
    assert str(over / "turn.md") in e.value.message
    assert "{{mood}}" in e.value.message


def test_missing_template_is_an_error(tmp_path):
    with pytest.raises(PromptError) as e:
        prompts.render("nope.md", {}, tmp_path)
    assert "nope.md" in e.value.message
    assert ".autodev/prompts/nope.md" in e.value.fix
    with pytest.raises(PromptError):
        prompts.load("nope.md")


def test_override_folder_that_does_not_exist_falls_back(tmp_path):
    out = prompts.render("turn.md", TURN_VALUES, tmp_path / "missing")
    assert out == prompts.render("turn.md", TURN_VALUES)
