"""autodev.shellparse against the hand-written lexer it replaces, on generated command lines."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autodev import _oldlexer, gates
from autodev.shellparse import UnparseableCommand

NAMES = st.sampled_from(["git", "rm", "echo", "make", "ls", "cat", "sudo", "env", "xargs", "timeout", "nohup"])
PLAIN = st.text(alphabet="abcxyz019_./-=+:,@%", min_size=1, max_size=6).filter(
    lambda w: not w.startswith(("-", "=")) or len(w) > 1
)


def _single(s: str) -> str:
    return "'" + s + "'"


def _double(s: str) -> str:
    return '"' + s + '"'


WORD = st.one_of(
    PLAIN,
    st.builds(_single, st.text(alphabet="ab &|;()<>$`\"#*", max_size=6)),
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


def compound(inner):
    return st.one_of(
        st.builds(lambda a, op, b: f"{a} {op} {b}", inner, st.sampled_from(["&&", "||", ";", "|", "&"]), inner),
        st.builds(lambda a: f"( {a} )", inner),
        st.builds(lambda a: "{ " + a + "; }", inner),
        st.builds(lambda a: f"echo $( {a} )", inner),
        st.builds(lambda a: "bash -c " + "'" + a.replace("'", "'\\''") + "'", inner),
        st.builds(lambda a: f"if {a}; then {a}; fi", inner),
        st.builds(lambda a: f"for f in a b; do {a}; done", inner),
    )


COMMANDS = st.recursive(simple(), compound, max_leaves=6)


def outcome(fn, command):
    try:
        return fn(command)
    except UnparseableCommand:
        return "unparseable"
    except _oldlexer.UnparseableCommand:
        return "unparseable"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(COMMANDS)
def test_both_parsers_see_the_same_commands(command):
    assert outcome(gates.command_parts, command) == outcome(_oldlexer.command_parts, command)
