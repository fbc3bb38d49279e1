"""Programs with a command language of their own, for `runners`: whether an awk program or a
GNU sed script starts shell commands (awk's `system()` and pipes, sed's `e` command and `s///e`
flag). A program in a file, or one only known at run time, counts as starting them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from autodev.guard.shellwords import Word
from autodev.guard.shellwrappers import option_values

AWK = {"awk", "gawk", "mawk", "nawk", "busybox-awk"}
# awk code that starts a command or reads more code: system(), `print | cmd`, `cmd | getline`,
# gawk's `|&`, `@include` and `@load`
AWK_RUNS = re.compile(
    r"\bsystem\s*\(|\|\s*getline\b|\|&|@(include|load)\b|\b(print|printf)\b[^;{}\n]*?[^|]\|(?!\|)"
)
SED = {"sed", "gsed"}


def awk(name: str, args: Sequence[Word]) -> str | None:
    """Why this awk command may run anything, or None."""
    if option_values(args, "fEil", frozenset({"--file", "--exec", "--include", "--load"})):
        return f"`{name}` runs a program file the guard does not read"
    programs = option_values(args, "e", frozenset({"--source"}))
    if not programs:
        taken = {id(v) for v in option_values(args, "vFW", frozenset({"--assign", "--field-separator"}))}
        programs = [w for w in args if not w.text.startswith("-") and id(w) not in taken][:1]
    for program in programs:
        if program.dynamic:
            return f"`{name}` runs a program only known at run time"
        if AWK_RUNS.search(program.text):
            return f"`{name}` starts commands from its program (system(), pipes)"
    return None


def sed(args: Sequence[Word]) -> str | None:
    """Why this sed command may run anything, or None."""
    scripts = option_values(args, "e", frozenset({"--expression"}))
    if option_values(args, "f", frozenset({"--file"})):
        return "`sed -f` runs a script file, whose `e` commands run shell commands"
    if not scripts:
        taken = {id(v) for v in option_values(args, "l", frozenset({"--line-length"}))}
        scripts = [w for w in args if not w.text.startswith("-") and id(w) not in taken][:1]
    for s in scripts:
        if s.dynamic:
            return "`sed` runs a script only known at run time (its `e` command runs shell commands)"
        if sed_runs(s.text):
            return "`sed` runs a shell command (the `e` command or the `s///e` flag)"
    return None


def sed_runs(script: str) -> bool:
    """Whether a GNU sed script has an `e` command or an `s` command with the `e` flag. A script
    this reader cannot follow counts as running one."""
    i, n = 0, len(script)
    while i < n:
        c = script[i]
        if c in " \t\n;{}!":
            i += 1
            continue
        # an address: a number, $, first~step, /re/ or \cREc, then maybe ,addr
        m = re.match(r"[0-9~+$]+", script[i:])
        if m:
            i += m.end()
            continue
        if c in "/\\":
            delim = script[i + 1] if c == "\\" else "/"
            j = _end_of(script, i + (2 if c == "\\" else 1), delim)
            if j < 0:
                return True
            i = j + 1
            while i < n and script[i] in "IM":
                i += 1
            continue
        if c == ",":
            i += 1
            continue
        if c == "e":
            return True
        if c in "sy":
            if i + 1 >= n:
                return True
            delim = script[i + 1]
            j = _end_of(script, i + 2, delim)
            k = _end_of(script, j + 1, delim) if j >= 0 else -1
            if k < 0:
                return True
            m = re.match(r"[0-9gpiImMe]*", script[k + 1 :])
            flags = m.group(0) if m else ""
            if c == "s" and "e" in flags:
                return True
            i = k + 1 + len(flags)
            if c == "s" and script[i : i + 1] == "w":  # w FILE ends the command
                i = _line_end(script, i)
            continue
        if c in "aicrRwWbtTv:#lLqQ":
            # text, a file name or a label to the end of the line (labels also end at `;`)
            i = _line_end(script, i) if c in "aicrRwW:#" else _cmd_end(script, i)
            continue
        if c in "=dDgGhHnNpPxzF":
            i += 1
            continue
        return True  # not understood: assume the worst
    return False


def _end_of(s: str, i: int, delim: str) -> int:
    while i < len(s):
        if s[i] == "\\":
            i += 2
            continue
        if s[i] == delim:
            return i
        i += 1
    return -1


def _line_end(s: str, i: int) -> int:
    j = s.find("\n", i)
    return len(s) if j < 0 else j


def _cmd_end(s: str, i: int) -> int:
    m = re.compile(r"[;\n}]").search(s, i)
    return m.start() if m else len(s)
