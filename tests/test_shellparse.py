"""autodev.guard.shellparse on generated command lines.

While the hand-written lexer still existed, a Hypothesis test compared the two parsers on these
same generated lines (4,000 examples clean); the lexer is gone, and the comparison lives on as
properties of the new parser: quoting round-trips, wrapping and composing a command line keeps
its parts, and nothing but UnparseableCommand ever escapes.
"""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autodev.guard import gates
from autodev.guard.shellparse import UnparseableCommand, parse
from tests.conftest import examples

NAMES = st.sampled_from(
    ["git", "rm", "echo", "make", "ls", "cat", "sudo", "env", "xargs", "timeout", "nohup"]
)
PLAIN = st.text(alphabet="abcxyz019_./-=+:,@%", min_size=1, max_size=6).filter(
    lambda w: not w.startswith(("-", "=")) or len(w) > 1
)


def _single(s: str) -> str:
    return "'" + s + "'"


def _double(s: str) -> str:
    return '"' + s + '"'


WORD = st.one_of(
    PLAIN,
    st.builds(_single, st.text(alphabet='ab &|;()<>$`"#*', max_size=6)),
    st.builds(_double, st.text(alphabet="ab &|;()<>'#*", max_size=6)),
    st.builds(lambda a, b: a + b, PLAIN, st.sampled_from(["$X", "${Y}", "$(ls)", "`ls`", '"$(git push)"'])),
    st.sampled_from(["-rf", "-r", "--force", "push", "origin", "main", "-c", "X=1", "{}", "\\;", "a\\ b"]),
)
REDIRECT = st.sampled_from(["", " > out", " 2>&1", " < in", " >> log 2>&1"])


@st.composite
def simple(draw):
    words = [draw(NAMES), *draw(st.lists(WORD, max_size=4))]
    prefix = draw(st.sampled_from(["", "A=1 ", "B='x y' "]))
    return prefix + " ".join(words) + draw(REDIRECT)


def _quote(script: str) -> str:
    return "'" + script.replace("'", "'\\''") + "'"


def compound(inner):
    return st.one_of(
        st.builds(
            lambda a, op, b: f"{a} {op} {b}", inner, st.sampled_from(["&&", "||", ";", "|", "&"]), inner
        ),
        st.builds(lambda a: f"( {a} )", inner),
        st.builds(lambda a: "{ " + a + "; }", inner),
        st.builds(lambda a: f"echo $( {a} )", inner),
        st.builds(lambda a: "bash -c " + _quote(a), inner),
        st.builds(lambda a: f"if {a}; then {a}; fi", inner),
        st.builds(lambda a: f"for f in a b; do {a}; done", inner),
    )


COMMANDS = st.recursive(simple(), compound, max_leaves=6)
FAST = settings(max_examples=examples(75), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def parts_or_none(command: str) -> list[str] | None:
    try:
        return gates.command_parts(command)
    except UnparseableCommand:
        return None


@FAST
@given(st.text(max_size=40))
def test_any_text_parses_or_is_unparseable(command):
    parts_or_none(command)  # anything else escaping (IndexError, RecursionError, ...) fails


@FAST
@given(
    st.lists(st.text(alphabet=st.characters(blacklist_characters="\0"), min_size=1, max_size=8), max_size=5)
)
def test_quoted_words_come_back_as_written(args):
    parts = parse("printf " + " ".join(shlex.quote(a) for a in args))
    assert [w.text for w in parts[0].words] == ["printf", *args]
    assert len(parts) == 1


@FAST
@given(COMMANDS, COMMANDS)
def test_composing_keeps_each_sides_parts(a, b):
    pa, pb = parts_or_none(a), parts_or_none(b)
    if pa is None or pb is None:
        return
    assert parts_or_none(f"{a} && {b}") == pa + pb
    assert parts_or_none(f"( {a} ) | {b}") == pa + pb


@FAST
@given(COMMANDS)
def test_wrapping_keeps_the_parts(command):
    parts = parts_or_none(command)
    if parts is None:
        return
    wrapped = parts_or_none("bash -c " + _quote(command))
    assert wrapped is not None and wrapped[1:] == parts
    assert parts_or_none("{ " + command + "; }") == parts


@FAST
@given(COMMANDS, COMMANDS)
def test_a_push_anywhere_is_refused_without_a_gate(a, b):
    command = f"{a} && bash -c " + _quote(f"{b}; git push origin main")
    message, used = gates.guard(command, ["git push*"], [])
    assert message is not None and used == []


def words(command: str) -> list[str]:
    return [" ".join(w.text for w in p.words) for p in parse(command)]


def test_composing_keeps_each_sides_parts_with_an_equals_operator():
    # Found by Hypothesis on a clean clone: tree-sitter-bash reads `==` in a plain command as a
    # test operator, so inside `( )` what followed became a `regex` (`git == 2>&1`), and at top
    # level the `2` of `2>&1` became an argument (`git == 2`). Bash sees the words `git ==`.
    a, b = "git && git == 2>&1", "git"
    assert words(a) == ["git", "git =="]
    assert words(f"( {a} ) | {b}") == words(a) + words(b) == ["git", "git ==", "git"]
    assert parts_or_none(f"( {a} ) | {b}") == parts_or_none(a) + parts_or_none(b)


def test_composing_keeps_each_sides_parts_with_a_backtick_in_single_quotes():
    # Found by `make fuzz`: after a backtick substitution, tree-sitter-bash misread `'` '` (a
    # backtick and a blank in single quotes) and the whole line was unparseable; `'`'` was not.
    a, b = "git && git 0`ls`", "git '` '"
    assert parts_or_none(f"{a} && {b}") == parts_or_none(a) + parts_or_none(b)
    assert words(f"{a} && {b}")[-1] == "git ` "


def test_a_quoted_backtick_hides_no_command():
    # The masked quotes hold no command; a real substitution beside them is still seen.
    command = "b `ls` && c '` x' && git push origin main `git push --force`"
    message, _ = gates.guard(command, ["git push*"], [])
    assert message is not None
    assert words(command)[-1] == "git push --force"


@pytest.mark.parametrize("op", ["==", "=~"])
def test_an_equals_operator_cannot_hide_the_rest_of_a_subshell(op):
    # The `regex` tree-sitter made of `x; git push origin main` hid the push from the guard.
    command = f"( echo {op} x; git push origin main )"
    assert words(command) == [f"echo {op} x", "git push origin main"]
    message, _ = gates.guard(command, ["git push*"], [])
    assert message is not None and "git push origin main" in message


def test_equals_operators_keep_their_meaning_in_tests():
    assert words("test a == b") == ["test a == b"]
    assert words("[ a == b ]") == ["[ a == b ]"]
    assert words("[[ a =~ b.* ]] && git push") == ["git push"]
    assert words("echo ==$x") == ["echo ==$x"]


def test_non_ascii_input_cannot_crash_the_process():
    # tree-sitter-bash#337: `{` followed by a 4-byte character read outside the scanner's tables
    # and crashed about one process in two on Linux; a crash here kills the daemon.
    code = (
        "from autodev.guard.shellparse import parse, UnparseableCommand\n"
        "for _ in range(2000):\n"
        "    for s in ('{\\U000a07d1', '{\\U00031860', 'g{\\U000a07d1f\\xad'):\n"
        "        try: parse(s)\n"
        "        except UnparseableCommand: pass\n"
    )
    for _ in range(2):
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr[-2000:]


def test_non_ascii_words_are_read_from_the_original_text():
    assert gates.command_parts("echo 'héllo wörld' && git push origin ünïcode") == [
        "echo 'héllo wörld'",
        "git push origin ünïcode",
    ]
