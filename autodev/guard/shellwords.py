"""The words and simple commands a shell command line is made of: a word after quote removal
(`Word`), a simple command and the commands it unwraps to (`Part`), the unquoting rules of bash
(backslashes, double quotes, `$'...'`) and which quote a line leaves open.

`shellparse` reads a command line into these; `gates` matches them against patterns.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

_NEEDS_QUOTES = re.compile(r"[\s'\"\\;&|()<>$`]")
QUOTED = "\0"  # stands for quoted text in the unquoted skeleton of a word


class UnparseableCommand(Exception):
    """The guard cannot tell which commands a command line would run.

    `opaque` is True when the line runs code no parser can see from the command line (a command
    name computed at run time, eval of computed text, a shell reading commands from stdin, git
    settings that run programs); gateOpaque decides those.
    """

    def __init__(self, why: str, *, opaque: bool = False):
        self.why = why
        self.opaque = opaque
        super().__init__(
            f"cannot check this command against gateRequired: {why}. Split it into plain "
            "commands joined by &&, ; or | with their words written out (no $VAR or $(...) as a "
            "command name or in a gated command, no eval or sh -c of computed text), or post "
            "kind=gate naming the whole command exactly as written"
        )


@dataclass(frozen=True)
class Word:
    text: str  # the word after quote removal; expansions keep their source text
    raw: str  # the word as written
    dynamic: bool = False  # contains $VAR, $(...), `...`: its value is only known at run time
    glob: bool = False  # unquoted * ? [...]: the shell may replace it with file names
    brace: bool = False  # unquoted {a,b} / {1..3}: the shell may turn it into several words

    def show(self) -> str:
        if self.dynamic or self.raw == self.text:
            return self.raw
        # quoted in the source: quote it again if the shell would otherwise read it differently
        if (
            self.text == ""
            or _NEEDS_QUOTES.search(self.text)
            or self.text.startswith("#")
            or re.search(r"[*?\[{]", self.text)
        ):
            return f"'{self.text}'" if "'" not in self.text else shlex.quote(self.text)
        return self.text


@dataclass(frozen=True)
class Part:
    """One simple command: its words as written, and the commands it unwraps to (`sudo -u x git
    push` -> `git push`; a git alias -> its expansion), first the words themselves."""

    words: tuple[Word, ...]
    chain: tuple[tuple[Word, ...], ...]
    fed: bool = False  # xargs appends words read at run time to the last command of the chain

    @property
    def text(self) -> str:
        return join(self.words)


def join(words: Sequence[Word]) -> str:
    return " ".join(w.show() for w in words)


def basename(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def unescape(raw: str) -> tuple[str, str]:
    """Unquoted text: (text with backslash escapes removed, the same with escaped characters
    blanked, so an escaped `*` is not taken for a glob)."""
    text: list[str] = []
    skel: list[str] = []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\":
            nxt = raw[i + 1 : i + 2]
            if nxt != "\n":
                text.append(nxt or "\\")
                skel.append(QUOTED)
            i += 2
            continue
        text.append(c)
        skel.append(c)
        i += 1
    return "".join(text), "".join(skel)


def dq_unescape(s: str) -> str:
    return re.sub(r"\\([$`\"\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), s)


def c_unescape(body: str) -> str:
    simple = {
        "n": "\n",
        "t": "\t",
        "r": "\r",
        "a": "\a",
        "b": "\b",
        "e": "\x1b",
        "E": "\x1b",
        "f": "\f",
        "v": "\v",
        "\\": "\\",
        "'": "'",
        '"': '"',
        "?": "?",
    }

    def one(m: re.Match[str]) -> str:
        s = m.group(0)[1:]
        if s[0] in simple:
            return simple[s[0]]
        if s[0] in "xuU":
            return chr(int(s[1:], 16)) if len(s) > 1 else m.group(0)
        return chr(int(s, 8)) if s.isdigit() else m.group(0)

    return re.sub(
        r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|.)", one, body, flags=re.S
    )


def open_quote(src: str) -> str | None:
    """Which quote a command line leaves open, if any (comments and escapes respected)."""
    state = None  # None, "'", '"', "`"
    i = 0
    while i < len(src):
        c = src[i]
        if state == "'":
            if c == "'":
                state = None
        elif c == "\\":
            i += 1
        elif state is None and c == "#" and (i == 0 or src[i - 1] in " \t\n;&|()"):
            nl = src.find("\n", i)
            i = len(src) if nl < 0 else nl
            continue
        elif state is None and c in "'\"`":
            state = c
        elif state == '"' and c == '"':
            state = None
        elif state == "`" and c == "`":
            state = None
        i += 1
    return {
        "'": "a single quote (') is not closed",
        '"': 'a double quote (") is not closed',
        "`": "a backtick (`) is not closed",
    }.get(state or "")


class Walker(Protocol):
    """What the readers of nested commands (`shellnested`, `shellgit`) need from the syntax-tree
    walker (`shellparse`): the parts of a script a command runs inside it, read one level deeper."""

    def nested(self, script: str, out: list[Part]) -> None: ...
