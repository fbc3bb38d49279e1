"""What the command guard cannot see into (config `gateOpaque`): parts that run code that is
not on the command line. Inline interpreter code (`python -c`, `perl -e`, `node -e`, ...), a
program read from input (`... | python3`), and a script or module file created or changed during
the run (`bash push.sh`, `./push.sh`, `python x.py`, `python -m mod`). `gates.guard` gates these
like gateRequired matches when gateOpaque is "gated".

Which files were written in the run is a predicate (`written_since`): the file's change time
against the run's start, or no such file yet.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import assert_never

from autodev.guard import runners
from autodev.guard.shellnested import SHELLS, STDIN_FILES
from autodev.guard.shellwords import Part, Word, basename

_PYTHON = re.compile(r"^(python[0-9.]*|pypy[0-9.]*)$")
# interpreter -> (options that run inline code, short options taking an argument)
_INTERPRETERS: dict[str, tuple[tuple[str, ...], str]] = {
    "python": (("-c",), "WXQ"),
    "perl": (("-e", "-E"), "IMmx"),
    "ruby": (("-e",), "IrCEx"),
    "node": (("-e", "--eval", "-p", "--print"), "r"),
    "nodejs": (("-e", "--eval", "-p", "--print"), "r"),
    "bun": (("-e", "--eval", "-p", "--print"), ""),
    "deno": (("eval",), ""),
    "php": (("-r",), "cdz"),
    "lua": (("-e",), "l"),
    "Rscript": (("-e",), ""),
    "tclsh": ((), ""),
    "osascript": (("-e",), ""),
    "expect": (("-c",), "f"),
    "pwsh": (("-c", "-command", "-encodedcommand", "-ec"), ""),
    "julia": (("-e", "-E", "--eval", "--print"), "tJpL"),
    "R": (("-e",), "f"),
    "groovy": (("-e",), ""),
    "scala": (("-e",), ""),
    "elixir": (("-e",), "r"),
    "guile": (("-c",), "lL"),
    "racket": (("-e",), ""),
    "sbcl": (("--eval",), ""),
    "tsx": (("-e", "--eval", "-p", "--print"), ""),
    "ts-node": (("-e", "--eval", "-p", "--print"), "r"),
    "elvish": (("-c",), ""),
    "nu": (("-c", "--commands"), ""),
    "xonsh": (("-c",), ""),
}
_SHELL_NAMES = SHELLS
_INFO = {"-V", "--version", "-h", "--help", "-v"}


def _inline(name: str, args: Sequence[Word], flags: tuple[str, ...]) -> str | None:
    for w in args:
        t = w.text
        if t in flags:
            return t
        # clustered short flags: python -Ic, perl -ne, ruby -pe
        if any(len(f) == 2 and re.fullmatch(r"-[A-Za-z]*" + f[1], t) for f in flags if f.startswith("-")):
            return t
        if not t.startswith("-"):
            break
    return None


@dataclass(frozen=True)
class _Inline:
    option: str  # the option that gives the code (`-c`, `-e`, `--eval`)


@dataclass(frozen=True)
class _FromInput:
    pass


@dataclass(frozen=True)
class _Module:
    name: str  # `python -m NAME` ("" when the name is missing)


@dataclass(frozen=True)
class _Script:
    file: Word


@dataclass(frozen=True)
class _NoFile:
    """`source` without a file: it reads the commands it runs from its input."""


_Runs = _Inline | _FromInput | _Module | _Script | _NoFile
"""What a part runs that is not on the command line."""


def _script_of(words: tuple[Word, ...]) -> _Runs | None:
    """What a part runs from a program file, its input or inline code; None for an ordinary
    command."""
    head = words[0]
    name = basename(head.text)
    args = words[1:]
    if _PYTHON.match(name):
        name = "python"
    if name in ("source", ".") or name in _SHELL_NAMES:
        first = next((w for w in args if not w.text.startswith(("-", "+"))), None)
        if first is not None and first.text in STDIN_FILES:
            return None  # shellparse read the here-string, or refused the line
    if name in ("source", "."):
        return _Script(args[0]) if args else _NoFile()
    if name in _SHELL_NAMES:  # -c and reading stdin: shellparse decided those
        i = 0
        while i < len(args) and args[i].text.startswith(("-", "+")) and args[i].text not in ("-", "--"):
            t = args[i].text
            if t[0] == "-" and not t.startswith("--") and "c" in t:
                return None
            i += 2 if (t in ("--rcfile", "--init-file") or (not t.startswith("--") and t[-1] in "oO")) else 1
        if i < len(args) and args[i].text in ("-", "--"):
            i += 1
        return _Script(args[i]) if i < len(args) else None
    if name in _INTERPRETERS:
        flags, with_arg = _INTERPRETERS[name]
        code = _inline(name, args, flags)
        if code:
            return _Inline(code)
        i = 0
        while i < len(args):
            t = args[i].text
            if name == "python" and t == "-m":
                return _Module(args[i + 1].text if i + 1 < len(args) else "")
            if t == "-" or not t.startswith("-"):
                break
            i += 2 if (len(t) == 2 and t[1] in with_arg) else 1
        if i < len(args) and args[i].text != "-":
            return _Script(args[i])
        if args and all(w.text in _INFO for w in args):
            return None
        return _FromInput()
    if "/" in head.text:
        return _Script(head)
    return None


def opaque_parts(
    parts: list[Part], written: Callable[[str], bool | None] | None, line: str = ""
) -> list[tuple[str, str]]:
    """Every (part, why) that runs code the guard cannot read: a program that may run anything
    (`runners.why`: make, pytest, awk's system(), ...), inline interpreter code, a program read
    from input, or a script or module file written or changed in this run, not there yet, or
    named elsewhere in the same command `line` (`printf ... > x.py && python3 x.py`: the line
    may write it before it runs). `written(path)` says True (created or changed in this run),
    False (as it was before the run) or None (no such file); without it every script counts as
    written."""
    found: list[tuple[str, str]] = []
    cds = [p.chain[-1] for p in parts if basename(p.chain[-1][0].text) in ("cd", "pushd")]
    dirs: list[str | None] = [""]
    for cd in cds:
        dirs.append(cd[1].text if len(cd) > 1 and not cd[1].dynamic else None)
    writer: str | None = None  # an earlier command of the line that writes files it does not name
    for part in parts:
        words = part.chain[-1]
        earlier, writer = writer, writer or _writes_unnamed(words)
        anything = runners.why(words)
        if anything:
            found.append((part.text, anything))
            continue
        got = _script_of(words)
        if got is None:
            continue
        seen = _Seen(part.text, line, dirs, written, earlier)
        name = basename(words[0].text)
        match got:
            case _Inline(option):
                why = f"`{name} {option}` runs code given inline"
            case _FromInput():
                why = f"`{name}` reads the program it runs from its input"
            case _Module(module):
                why = _module_why(module, seen)
            case _NoFile():
                why = f"`{name}` without a file reads the commands it runs from its input"
            case _Script(file):
                why = _script_why(file, seen)
            case _:
                assert_never(got)
        if why is not None:
            found.append((part.text, why))
    return found


@dataclass(frozen=True)
class _Seen:
    """What a part's file is judged against: the part, its line, the folders `cd` may have made
    current, the run's `written` predicate, an earlier command that writes files it does not name."""

    part: str
    line: str
    dirs: list[str | None]
    written: Callable[[str], bool | None] | None
    earlier: str | None


def _module_why(code: str, seen: _Seen) -> str | None:
    mod = code.replace(".", "/")
    top = mod.split("/")[0]
    if code and _named_elsewhere((f"{mod}.py", f"{top}/", f"{top}.py"), seen.part, seen.line):
        return f"module `{code}` may be written by this same command line"
    cands = (f"{mod}.py", f"{mod}/__main__.py", f"{mod}/__init__.py")
    states = [_state(cand, seen.dirs, seen.written) for cand in cands] if code else []
    if True in states:
        return f"module `{code}` ({cands[states.index(True)]}) was written or changed in this run"
    if seen.earlier and code and all(st is None for st in states):
        return f"module `{code}` is not in the repository and `{seen.earlier}` may write it"
    return None


def _script_why(script: Word, seen: _Seen) -> str | None:
    if script.dynamic:
        return f"the script `{script.raw}` is only known at run time"
    if _named_elsewhere((basename(script.text),), seen.part, seen.line):
        return f"`{script.text}` may be written by this same command line"
    if _state(script.text, seen.dirs, seen.written) is not False:
        return f"`{script.text}` was written or changed in this run (or is not there yet)"
    if seen.earlier:
        return f"`{seen.earlier}` earlier on the line may write `{script.text}`"
    return None


# Commands that write files without naming each one (archives, patches, git's work tree, copies
# of folders): a script run after them on the same line may be one they wrote.
_UNPACKERS = {"tar", "bsdtar", "gtar", "unzip", "7z", "7za", "cpio", "pax", "ar", "patch", "rsync", "wget"}
_GIT_WRITES = {
    *("checkout", "switch", "restore", "reset", "stash", "pull", "merge", "rebase", "am", "apply"),
    *("cherry-pick", "revert", "clone", "worktree", "read-tree", "checkout-index", "archive"),
}


def _writes_unnamed(words: tuple[Word, ...]) -> str | None:
    name = basename(words[0].text)
    args = [w.text for w in words[1:]]
    if name in _UNPACKERS or (
        name == "curl" and any(re.fullmatch(r"-[A-Za-z]*O|--remote-name(-all)?", a) for a in args)
    ):
        return name
    if name == "git":
        sub = next((a for a in args if not a.startswith("-")), "")
        return f"git {sub}" if sub in _GIT_WRITES else None
    if name in ("cp", "mv", "ln", "install") and any(
        a in (".", "..")
        or a.endswith("/")
        or re.fullmatch(r"-[A-Za-z]*[rRat][A-Za-z]*|--recursive|--target-directory.*", a)
        for a in args
    ):
        return name
    return None


_UNQUOTE = re.compile(r"[\"'\\]")


def _named_elsewhere(names: Sequence[str], part: str, line: str) -> bool:
    """Whether the command line names one of these files outside this part (a redirection, `cp`,
    `tee`, `curl -o`, ...), so it may write the file before the part runs it."""
    line, part = _UNQUOTE.sub("", line), _UNQUOTE.sub("", part)  # `"pm".py` is pm.py
    for name in names:
        pat = re.compile(r"(?<![\w.-])" + re.escape(name) + (r"(?![\w.-])" if not name.endswith("/") else ""))
        if len(pat.findall(line)) > len(pat.findall(part)):
            return True
    return False


def _state(path: str, dirs: list[str | None], written: Callable[[str], bool | None] | None) -> bool | None:
    """True when any place `path` may resolve to was written in this run (or is unknown)."""
    if written is None:
        return True
    states: list[bool | None] = []
    for d in [""] if path.startswith(("/", "~")) else dirs:
        if d is None:
            return True  # a `cd` to a place known only at run time
        states.append(written(os.path.join(d, path) if d else path))
    if any(s is True for s in states):
        return True
    return None if all(s is None for s in states) else False


def written_since(repo: Path, started_at: str | None) -> Callable[[str], bool | None]:
    """A `written` predicate for `opaque_parts`: a file counts as written in the run when its
    status changed (ctime, which a participant cannot set back) at or after the run started.
    Paths are taken relative to the repository, where commands run."""
    try:
        since = datetime.strptime(started_at or "", "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        since = 0.0  # no start time: every file counts as written

    def written(path: str) -> bool | None:
        p = Path(os.path.expanduser(path))
        try:
            st = (p if p.is_absolute() else repo / p).stat()
        except (OSError, ValueError):
            return None
        return st.st_ctime >= since

    return written
