"""Gate decisions and the `gateRequired` command guard, as pure functions.

Two jobs live here:

- `decide` turns a declared gate's text into a decision (auto-deny, auto-approve, or ask the
  user), naming the rule that decided.
- `guard` decides whether a shell command line may run: every simple command inside it that
  matches a `gateRequired` glob must be covered by an approved gate that names it.

The guard has to see through compound commands (`cd x && git push`), pipes, subshells, command
substitution and `sh -c '...'`, because a participant that wants to run `git push` will often
wrap it. It does so with a small shell lexer. `shlex` alone is not enough: it forgets whether an
operator was quoted (`echo "&&"` and `echo &&` give the same tokens) and cannot see `$(...)`
inside double quotes, which the shell does run. The lexer below tracks both.

What the guard is and is not: a guardrail against a participant running a gated command by
accident or casually wrapped, not a sandbox against a determined adversary. Known limits:
interpreters other than shells (`python -c "os.system(...)"`), aliases and functions defined
elsewhere, `git` aliases, and option orders a glob does not anticipate (`rm -r -f x` does not
match `rm -rf *`) are not seen through. Patterns are globs (`fnmatch`), so `git push*` also
matches `git pushy`; write `git push *` plus `git push` for word-exact matching.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

MAX_DEPTH = 8  # nested sh -c / `...` levels before we give up (and refuse when relevant)
MAX_OPEN = 64  # nested ( / $( inside one script

_BLANK = " \t"
_OPERATOR_CHARS = ";&|()<>\n"
# Longest first so `&&` wins over `&` and `<<-` over `<<`.
_OPERATORS = sorted(
    [
        ";;",
        ";",
        "&&",
        "&",
        "||",
        "|&",
        "|",
        "\n",
        "(",
        ")",
        "<<<",
        "<<-",
        "<<",
        "<>",
        "<&",
        "<",
        ">>",
        ">|",
        ">&",
        ">",
        "&>>",
        "&>",
    ],
    key=len,
    reverse=True,
)
_SEPARATORS = {";;", ";", "&&", "&", "||", "|&", "|", "\n"}
_HEREDOC = {"<<", "<<-"}
# Keywords that may precede a command without being one; dropped from the part.
_SKIP_KEYWORDS = {"!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until"}
_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NEEDS_QUOTES = re.compile(r"[\s'\"\\;&|()<>$`]")

# Wrappers that run the rest of their arguments as a command:
# name -> (short options taking an argument, long options taking a separate argument,
#          positional arguments before the command, whether VAR=value words may precede it)
_WRAPPERS: dict[str, tuple[str, frozenset[str], int, bool]] = {
    "sudo": (
        "CDghpRrTtUu",
        frozenset(
            {
                "--chdir",
                "--close-from",
                "--group",
                "--host",
                "--other-user",
                "--prompt",
                "--role",
                "--type",
                "--user",
                "--command-timeout",
            }
        ),
        0,
        True,
    ),
    "env": ("uC", frozenset({"--unset", "--chdir"}), 0, True),
    "command": ("", frozenset(), 0, False),
    "exec": ("a", frozenset(), 0, False),
    "nohup": ("", frozenset(), 0, False),
    "time": ("fo", frozenset({"--format", "--output"}), 0, False),
    "nice": ("n", frozenset({"--adjustment"}), 0, False),
    "timeout": ("ks", frozenset({"--kill-after", "--signal"}), 1, False),
    "stdbuf": ("eio", frozenset({"--error", "--input", "--output"}), 0, False),
}
_GIT_OPTS_WITH_ARG = {
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--exec-path",
    "--super-prefix",
    "--config-env",
}
_XARGS_SHORT_WITH_ARG = "adEILnPs"
_XARGS_LONG_WITH_ARG = {
    "--arg-file",
    "--delimiter",
    "--max-args",
    "--max-chars",
    "--max-lines",
    "--max-procs",
    "--process-slot-var",
}
_FIND_EXEC = {"-exec", "-execdir", "-ok", "-okdir"}


class UnparseableCommand(Exception):
    """The guard cannot tell which commands a command line would run.

    `opaque` is True when the line runs code the lexer cannot see at all (a command name computed
    at run time, eval of computed text, a shell reading commands from stdin); a caller that wants
    to be stricter than `guard` may refuse those whenever any pattern is configured.
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


# -- the lexer / parser --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Word:
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
class _Part:
    words: tuple[_Word, ...]
    variants: tuple[tuple[_Word, ...], ...]  # forms matched against patterns (words first)

    @property
    def text(self) -> str:
        return _join(self.words)


def _join(words: Sequence[_Word]) -> str:
    return " ".join(w.show() for w in words)


@dataclass
class _Cmd:
    """A simple command being read."""

    words: list[_Word] = field(default_factory=list)
    nested: list[_Part] = field(default_factory=list)  # parts from $(...) etc. inside it
    redirect: bool = False  # the next word is a redirection target, not an argument
    header: bool = False  # a `for x in ...` / function header: not a command


class _Parser:
    def __init__(self, src: str, depth: int = 0):
        if depth > MAX_DEPTH:
            raise UnparseableCommand(f"commands nested more than {MAX_DEPTH} levels deep")
        self.src = src
        self.i = 0
        self.depth = depth
        self.heredocs: list[tuple[str, bool, bool]] = []  # (delimiter, quoted, strip tabs)
        self.open = 0  # ( and $( levels open, bounded so deep nesting cannot exhaust the stack

    # - structure -

    def parse(self) -> list[_Part]:
        out: list[_Part] = []
        self._sequence(None, out)
        return out

    def _sequence(self, stop: str | None, out: list[_Part]) -> None:
        """Read commands until `stop` (`)` for subshells and $(...)) or the end of the text."""
        self.open += 1
        if self.open > MAX_OPEN:
            raise UnparseableCommand(f"more than {MAX_OPEN} nested parentheses")
        try:
            self._commands(stop, out)
        finally:
            self.open -= 1

    def _commands(self, stop: str | None, out: list[_Part]) -> None:
        src = self.src
        cmd = _Cmd()
        while True:
            self._blanks()
            if self.i >= len(src):
                if stop:
                    raise UnparseableCommand(f"a `{stop}` is missing (unbalanced parentheses)")
                if cmd.redirect:
                    raise UnparseableCommand("a redirection has no target")
                self._finish(cmd, out)
                return
            c = src[self.i]
            if c == "#":  # a comment runs to the end of the line
                while self.i < len(src) and src[self.i] != "\n":
                    self.i += 1
                continue
            if src.startswith(("<(", ">("), self.i):  # process substitution: a command too
                start = self.i
                self.i += 2
                self._sequence(")", cmd.nested)
                self._add_word(cmd, _Word(src[start : self.i], src[start : self.i], dynamic=True))
                continue
            if c not in _OPERATOR_CHARS:
                word = self._word(cmd.nested)
                if (
                    word.text.isdigit()
                    and word.raw == word.text
                    and self.i < len(src)
                    and src[self.i] in "<>"
                ):
                    continue  # the `2` of `2>&1` names a file descriptor
                if self._keyword(word, cmd, out):
                    continue
                self._add_word(cmd, word)
                continue
            op = next(o for o in _OPERATORS if src.startswith(o, self.i))
            self.i += len(op)
            if op == ")":
                if stop != ")":
                    raise UnparseableCommand("a `)` has no matching `(`")
                self._finish(cmd, out)
                return
            if op == "(":
                cmd = self._open_paren(cmd, out)
                continue
            if op in _SEPARATORS:
                if cmd.redirect:
                    raise UnparseableCommand(f"a redirection has no target before `{op}`")
                self._finish(cmd, out)
                cmd = _Cmd()
                if op == "\n":
                    self._read_heredocs(out)
                continue
            if op in _HEREDOC:
                self._blanks()
                delim = self._word(cmd.nested)
                self.heredocs.append((delim.text, delim.raw != delim.text, op == "<<-"))
                continue
            cmd.redirect = True  # < > >> &> ... : the next word is where, not what

    def _add_word(self, cmd: _Cmd, word: _Word) -> None:
        if cmd.redirect:
            cmd.redirect = False  # a file name, not an argument (its $(...) parts are kept)
        else:
            cmd.words.append(word)

    def _open_paren(self, cmd: _Cmd, out: list[_Part]) -> _Cmd:
        src = self.src
        words = [w for w in cmd.words if not _ASSIGNMENT.match(w.raw)]
        if not cmd.words:
            if src.startswith("(", self.i):  # (( arithmetic )): no command inside
                self.i -= 1
                self._arithmetic()
                return cmd
            self._sequence(")", out)  # a subshell: its commands are parts of this line
            return cmd
        if cmd.words and cmd.words[-1].raw.endswith("=") and not words:
            self._array(cmd)  # a=(x y z)
            return cmd
        if len(cmd.words) == 1 and re.match(r"[ \t]*\)", src[self.i :]):  # name() { ...; }
            self.i = src.index(")", self.i) + 1
            self._finish(_Cmd(nested=cmd.nested, header=True), out)
            return _Cmd()
        raise UnparseableCommand("a `(` appears in the middle of a command")

    def _keyword(self, word: _Word, cmd: _Cmd, out: list[_Part]) -> bool:
        """Handle reserved words at the start of a command; True when the word was consumed."""
        if cmd.words or cmd.redirect or word.raw != word.text:
            return False
        t = word.text
        if t in _SKIP_KEYWORDS:
            return True
        if t == "case":
            raise UnparseableCommand("`case` statements are not analysed")
        if t in ("for", "select"):
            self._blanks()
            if self.src.startswith("((", self.i):
                self._arithmetic()
            cmd.header = True  # `for x in a b` names no command; the body follows `do`
            cmd.words.append(word)
            return True
        if t == "function":
            self._blanks()
            self._word(cmd.nested)
            m = re.match(r"[ \t]*\([ \t]*\)", self.src[self.i :])
            if m:
                self.i += m.end()
            self._finish(_Cmd(nested=cmd.nested, header=True), out)
            cmd.nested = []
            return True
        if t == "[[":
            self._conditional(cmd)
            return True
        return False

    def _conditional(self, cmd: _Cmd) -> None:
        """Skip `[[ ... ]]`, whose && || < > ( ) are not command operators."""
        src = self.src
        while True:
            self._blanks()
            if self.i >= len(src):
                raise UnparseableCommand("a `[[` has no matching `]]`")
            if src.startswith("]]", self.i) and (
                self.i + 2 >= len(src) or src[self.i + 2] in _BLANK + _OPERATOR_CHARS
            ):
                self.i += 2
                cmd.header = True
                return
            if src[self.i] in _OPERATOR_CHARS:
                self.i += 1
                continue
            self._word(cmd.nested)

    def _array(self, cmd: _Cmd) -> None:
        src = self.src
        while True:
            while self.i < len(src) and src[self.i] in _BLANK + "\n":
                self.i += 1
            if self.i >= len(src):
                raise UnparseableCommand("an array assignment `(` is not closed")
            if src[self.i] == ")":
                self.i += 1
                return
            if src[self.i] in _OPERATOR_CHARS:
                raise UnparseableCommand("an operator appears inside an array assignment")
            self._word(cmd.nested)

    def _arithmetic(self) -> str:
        """Skip `((...))` starting at self.i; arithmetic runs no commands unless it nests one."""
        src = self.src
        depth, start = 0, self.i
        while self.i < len(src):
            ch = src[self.i]
            self.i += 1
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    body = src[start : self.i]
                    if "$(" in body[1:] or "`" in body:
                        raise UnparseableCommand("a command substitution inside arithmetic")
                    return body
        raise UnparseableCommand("an arithmetic `((` is not closed")

    def _finish(self, cmd: _Cmd, out: list[_Part]) -> None:
        words = list(cmd.words)
        while words and _ASSIGNMENT.match(words[0].raw):
            words.pop(0)  # FOO=1 cmd: the assignment is not what runs
        if words and not cmd.header:
            self._command(tuple(words), out)
        out.extend(cmd.nested)

    def _command(self, words: tuple[_Word, ...], out: list[_Part]) -> None:
        chain = [words]
        while (inner := _unwrap(chain[-1])) is not None:
            chain.append(inner)
        inner = chain[-1]
        head = inner[0]
        if head.dynamic or head.glob or head.brace:
            raise UnparseableCommand(f"the command name `{head.raw}` is only known at run time", opaque=True)
        out.append(_Part(words, _variants(chain)))
        name = _basename(head.text)
        if name in _SHELLS:
            self._shell(inner, out)
        elif name == "eval":
            args = inner[1:]
            if any(w.dynamic for w in args):
                raise UnparseableCommand(
                    f"`eval` runs text computed at run time ({_join(args)})", opaque=True
                )
            self._nested(" ".join(w.text for w in args), out)
        elif name == "xargs":
            rest = _skip_options(inner[1:], _XARGS_SHORT_WITH_ARG, _XARGS_LONG_WITH_ARG)
            if rest:
                self._command(rest, out)
        elif name == "find":
            i = 0
            while i < len(inner):
                if inner[i].text in _FIND_EXEC:
                    j = i + 1
                    while j < len(inner) and inner[j].text not in (";", "+"):
                        j += 1
                    if j > i + 1:
                        self._command(inner[i + 1 : j], out)
                    i = j
                i += 1

    def _shell(self, words: tuple[_Word, ...], out: list[_Part]) -> None:
        """`bash -c 'script'`: the script's commands are parts too."""
        has_c = reads_stdin = False
        i = 1
        while i < len(words):
            w = words[i]
            t = w.text
            if w.dynamic:
                raise UnparseableCommand(f"a shell option `{w.raw}` is only known at run time", opaque=True)
            if t in ("-", "--"):
                i += 1
                break
            if t.startswith("--"):
                i += 2 if t in ("--rcfile", "--init-file") else 1
                continue
            if len(t) > 1 and t[0] in "-+":
                flags = t[1:]
                has_c |= t[0] == "-" and "c" in flags
                reads_stdin |= t[0] == "-" and "s" in flags
                i += 2 if ("o" in flags or "O" in flags) else 1
                continue
            break
        rest = words[i:]
        if has_c:
            if rest:
                if rest[0].dynamic:
                    raise UnparseableCommand(
                        f"the shell script `{rest[0].raw}` is only known at run time", opaque=True
                    )
                self._nested(rest[0].text, out)
        elif reads_stdin or not rest:
            raise UnparseableCommand(
                f"`{_join(words)}` reads the commands it runs from its input", opaque=True
            )

    def _nested(self, script: str, out: list[_Part]) -> None:
        out.extend(_Parser(script, self.depth + 1).parse())

    def _read_heredocs(self, out: list[_Part]) -> None:
        """Skip here-document bodies (they are data), but run their $(...) through the parser
        when the delimiter is unquoted, since the shell expands those."""
        src = self.src
        for delim, quoted, strip_tabs in self.heredocs:
            start = self.i
            while self.i < len(src):
                end = src.find("\n", self.i)
                end = len(src) if end < 0 else end
                line = src[self.i : end]
                self.i = min(end + 1, len(src))
                if (line.lstrip("\t") if strip_tabs else line) == delim:
                    body = src[start : self.i - len(line) - 1]
                    break
            else:
                body = src[start:]
            if not quoted:
                sub = _Parser(body, self.depth + 1)
                nested: list[_Part] = []
                while sub.i < len(body):
                    if body[sub.i] == "\\":
                        sub.i += 2
                    elif body[sub.i] == "$":
                        sub._dollar(nested)
                    elif body[sub.i] == "`":
                        sub._backtick(nested)
                    else:
                        sub.i += 1
                out.extend(nested)
        self.heredocs = []

    # - words -

    def _blanks(self) -> None:
        src = self.src
        while self.i < len(src):
            if src[self.i] in _BLANK:
                self.i += 1
            elif src.startswith("\\\n", self.i):
                self.i += 2
            else:
                return

    def _word(self, nested: list[_Part]) -> _Word:
        src = self.src
        start = self.i
        text: list[str] = []
        dynamic = glob = brace = False
        while self.i < len(src):
            c = src[self.i]
            if c in _BLANK or c in _OPERATOR_CHARS:
                break
            if c == "\\":
                if src.startswith("\\\n", self.i):
                    self.i += 2
                    continue
                text.append(src[self.i + 1 : self.i + 2] or "\\")
                self.i += 2
            elif c == "'":
                end = src.find("'", self.i + 1)
                if end < 0:
                    raise UnparseableCommand("a single quote (') is not closed")
                text.append(src[self.i + 1 : end])
                self.i = end + 1
            elif c == '"':
                t, d = self._double_quoted(nested)
                text.append(t)
                dynamic |= d
            elif c == "$":
                t, d = self._dollar(nested)
                text.append(t)
                dynamic |= d
            elif c == "`":
                text.append(self._backtick(nested))
                dynamic = True
            else:
                if c in "*?":
                    glob = True
                elif c == "[" and re.match(r"\[[^\s;&|()<>\[]*\]", src[self.i :]):
                    glob = True
                elif c == "{" and re.match(r"\{[^\s{}]*(,|\.\.)[^\s{}]*\}", src[self.i :]):
                    brace = True
                text.append(c)
                self.i += 1
        return _Word("".join(text), src[start : self.i], dynamic, glob, brace)

    def _double_quoted(self, nested: list[_Part]) -> tuple[str, bool]:
        src = self.src
        self.i += 1
        text: list[str] = []
        dynamic = False
        while self.i < len(src):
            c = src[self.i]
            if c == '"':
                self.i += 1
                return "".join(text), dynamic
            if c == "\\":
                nxt = src[self.i + 1 : self.i + 2]
                if nxt == "\n":
                    pass
                elif nxt in ("$", "`", '"', "\\"):
                    text.append(nxt)
                else:
                    text.append("\\" + nxt)
                self.i += 2
            elif c == "$":
                t, d = self._dollar(nested)
                text.append(t)
                dynamic |= d
            elif c == "`":
                text.append(self._backtick(nested))
                dynamic = True
            else:
                text.append(c)
                self.i += 1
        raise UnparseableCommand('a double quote (") is not closed')

    def _dollar(self, nested: list[_Part]) -> tuple[str, bool]:
        """Read an expansion at `$`; returns (its text, whether its value is dynamic)."""
        src = self.src
        start = self.i
        nxt = src[self.i + 1 : self.i + 2]
        if src.startswith("$((", self.i):
            self.i += 1
            return "$" + self._arithmetic(), True
        if nxt == "(":
            self.i += 2
            self._sequence(")", nested)
            return src[start : self.i], True
        if nxt == "{":
            self.i += 2
            self.open += 1
            if self.open > MAX_OPEN:
                raise UnparseableCommand(f"more than {MAX_OPEN} nested expansions")
            depth = 1
            while self.i < len(src) and depth:
                c = src[self.i]
                if c == "\\":
                    self.i += 2
                elif c == "'":
                    end = src.find("'", self.i + 1)
                    self.i = len(src) if end < 0 else end + 1
                elif c == '"':
                    self._double_quoted(nested)
                elif c == "$":
                    self._dollar(nested)
                elif c == "`":
                    self._backtick(nested)
                else:
                    depth += {"{": 1, "}": -1}.get(c, 0)
                    self.i += 1
            if depth:
                raise UnparseableCommand("a `${` is not closed")
            self.open -= 1
            return src[start : self.i], True
        if nxt == "'":  # $'...': a literal with C escapes
            end = start + 2
            while end < len(src) and src[end] != "'":
                end += 2 if src[end] == "\\" else 1
            if end >= len(src):
                raise UnparseableCommand("a $'...' string is not closed")
            self.i = end + 1
            return _c_unescape(src[start + 2 : end]), False
        if nxt == '"':  # $"...": a translatable string, otherwise double-quoted
            self.i += 1
            return self._double_quoted(nested)
        m = _NAME.match(src, self.i + 1)
        if m:
            self.i = m.end()
            return src[start : self.i], True
        if nxt and nxt in "0123456789@*#?$!-":
            self.i += 2
            return src[start : self.i], True
        self.i += 1
        return "$", False

    def _backtick(self, nested: list[_Part]) -> str:
        src = self.src
        start = self.i
        self.i += 1
        inner: list[str] = []
        while self.i < len(src):
            c = src[self.i]
            if c == "`":
                self.i += 1
                self._nested("".join(inner), nested)
                return src[start : self.i]
            if c == "\\" and src[self.i + 1 : self.i + 2] in ("$", "`", "\\"):
                inner.append(src[self.i + 1])
                self.i += 2
            else:
                inner.append(c)
                self.i += 1
        raise UnparseableCommand("a backtick (`) is not closed")


def _c_unescape(body: str) -> str:
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

    def one(m: re.Match) -> str:
        s = m.group(0)[1:]
        if s[0] in simple:
            return simple[s[0]]
        if s[0] in "xuU":
            return chr(int(s[1:], 16)) if len(s) > 1 else m.group(0)
        return chr(int(s, 8)) if s.isdigit() else m.group(0)

    return re.sub(
        r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|.)", one, body, flags=re.S
    )


# -- wrappers and variants -----------------------------------------------------------------------


def _basename(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _skip_options(
    words: Sequence[_Word], short_arg: str, long_arg: set[str] | frozenset[str], assignments: bool = False
) -> tuple[_Word, ...]:
    """Drop leading options (and the arguments of those that take one); returns the rest."""
    i = 0
    while i < len(words):
        w = words[i]
        t = w.text
        if w.dynamic:
            break
        if t == "--":
            i += 1
            break
        if assignments and _ASSIGNMENT.match(t):
            i += 1
            continue
        if t.startswith("--"):
            i += 2 if (t in long_arg and "=" not in t) else 1
            continue
        if t.startswith("-") and len(t) > 1:
            skip = 1
            for j, ch in enumerate(t[1:], 1):
                if ch in short_arg:
                    skip = 2 if j == len(t) - 1 else 1
                    break
            i += skip
            continue
        break
    return tuple(words[i:])


def _unwrap(words: tuple[_Word, ...]) -> tuple[_Word, ...] | None:
    """`sudo -u x git push` -> `git push`; None when the first word is not a wrapper."""
    head = words[0]
    spec = _WRAPPERS.get(_basename(head.text)) if not head.dynamic else None
    if spec is None:
        return None
    short_arg, long_arg, positionals, assignments = spec
    if head.text == "env":
        for w in words[1:]:
            if w.text.startswith("--split-string") or re.match(r"-[^-]*S", w.text):
                raise UnparseableCommand("`env -S` (split string) is not analysed")
            if not w.text.startswith("-"):
                break
    rest = _skip_options(words[1:], short_arg, long_arg, assignments)[positionals:]
    return rest or None


def _git_variant(words: tuple[_Word, ...]) -> tuple[_Word, ...] | None:
    """`git -C repo --no-pager push` -> `git push`, so patterns need not list git's options."""
    i = 1
    while i < len(words) and not words[i].dynamic and words[i].text.startswith("-"):
        i += 2 if words[i].text in _GIT_OPTS_WITH_ARG else 1
    return (words[0], *words[i:]) if i > 1 else None


def _variants(chain: list[tuple[_Word, ...]]) -> tuple[tuple[_Word, ...], ...]:
    found: dict[str, tuple[_Word, ...]] = {}
    for words in chain:
        forms = [words]
        head = words[0]
        if "/" in head.text:  # /usr/bin/git push -> git push
            base = _basename(head.text)
            forms.append((_Word(base, base), *words[1:]))
        for f in list(forms):
            if _basename(f[0].text) == "git" and (g := _git_variant(f)):
                forms.append(g)
        for f in forms:
            found.setdefault(_join(f), f)
    return tuple(found.values())


def _parts(command: str) -> list[_Part]:
    return _Parser(command).parse()


# -- public API ----------------------------------------------------------------------------------


def command_parts(command: str) -> list[str]:
    """The simple commands a shell command line would run, each normalised (words joined by one
    space, quotes removed unless a word needs them, leading VAR=value assignments and
    redirections dropped). A command that wraps another (`sh -c '...'`, `xargs cmd`, `$(...)`,
    `find -exec`) yields both. Raises UnparseableCommand when that cannot be determined."""
    return [p.text for p in _parts(command)]


def _norm_pattern(pattern: str) -> str:
    return " ".join(pattern.split())


def _literal_prefix(pattern: str) -> str:
    m = re.search(r"[*?\[]", pattern)
    return pattern[: m.start()] if m else pattern


def required_parts(command: str, patterns: Sequence[str]) -> list[tuple[str, str]]:
    """Every (part, pattern) where a part of `command` matches a gateRequired glob.

    A part also matches through wrappers (`sudo`, `env VAR=1`, `command`, `exec`, `nohup`,
    `time`, `nice`, `timeout`, `stdbuf`), a path (`/usr/bin/git`) and git's global options
    (`git -C dir push`). A part with a word computed at run time (`git $X origin`) whose fixed
    words could still lead to a pattern raises UnparseableCommand."""
    pats = [(p, _norm_pattern(p)) for p in patterns if p.strip()]
    found: list[tuple[str, str]] = []
    for part in _parts(command):
        for original, pat in pats:
            if any(fnmatch.fnmatchcase(_join(v), pat) for v in part.variants):
                found.append((part.text, original))
                continue
            for v in part.variants:
                k = next((n for n, w in enumerate(v) if w.dynamic or w.brace), None)
                if k is None:
                    continue
                fixed = _join(v[:k]) + " "
                lit = _literal_prefix(pat)
                if fixed.startswith(lit) or lit.startswith(fixed):
                    raise UnparseableCommand(
                        f"`{part.text}` has a word only known at run time ({v[k].raw}), so it "
                        f"may or may not match gateRequired pattern {original!r}"
                    )
    return found


def decide(
    text: str, *, auto_deny: Sequence[str], auto_approve: Sequence[str], mode: str
) -> tuple[str | None, str]:
    """Decide a declared gate from its text: ("denied"|"approved"|None, the rule that decided).

    Deny globs are tried on the whole text and on each line, so one bad line in a long gate is
    enough to deny it; approve globs must match the whole text, so an approve rule cannot be
    satisfied by one harmless line. None means: ask the user (gateMode "gated")."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for pat in auto_deny:
        if (
            fnmatch.fnmatchcase(text, pat)
            or fnmatch.fnmatchcase(text.strip(), pat)
            or any(fnmatch.fnmatchcase(ln, pat) for ln in lines)
        ):
            return "denied", f"gateAutoDeny {pat!r}"
    for pat in auto_approve:
        if fnmatch.fnmatchcase(text, pat) or fnmatch.fnmatchcase(text.strip(), pat):
            return "approved", f"gateAutoApprove {pat!r}"
    if mode == "auto":
        return "approved", "gateMode auto"
    if mode == "gated":
        return None, "gateMode gated"
    raise ValueError(f"gateMode must be 'gated' or 'auto', not {mode!r}")


def _ws(text: str) -> str:
    return " ".join(text.split())


def _code_spans(text: str) -> list[str]:
    spans = re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.S)
    spans += re.findall(r"(?<!`)`([^`\n]+)`(?!`)", re.sub(r"```.*?```", " ", text, flags=re.S))
    return spans


def covers(gate_text: str, part: str) -> bool:
    """Whether an approved gate's text names this command part.

    True when the part (whitespace normalised) occurs in the gate text as a whole command, not as
    the prefix of a longer word (`git push origin main` is not covered by `... main-v2`), or when
    a backtick-quoted command in the gate text parses to the same part, so quoting differences
    (`git commit -m "x y"` vs `'x y'`) do not matter."""
    p = _ws(part)
    if not p:
        return False
    if re.search(r"(?<![\w/.=-])" + re.escape(p) + r"(?![\w/=-]|\.[^\s])", _ws(gate_text)):
        return True
    for span in _code_spans(gate_text):
        try:
            if any(_ws(q) == p for q in command_parts(span)):
                return True
        except UnparseableCommand:
            continue
    return False


def _could_match(command: str, patterns: Sequence[str]) -> bool:
    """Whether the raw text mentions any pattern's first word: as a word (any case, so `$GIT`
    counts) when it is literal, else all of its literal pieces anywhere."""
    for pat in patterns:
        words = pat.split()
        if not words:
            continue
        first = words[0]
        pieces = [p for p in re.split(r"\*|\?|\[[^\]]*\]", first) if p]
        if pieces == [first]:
            if re.search(r"(?<![A-Za-z0-9_])" + re.escape(first) + r"(?![A-Za-z0-9_])", command, flags=re.I):
                return True
        elif all(p.lower() in command.lower() for p in pieces):
            return True
    return False


def _match_gates(parts: list[str], gates: list[Mapping]) -> dict[int, int]:
    """Assign each part a distinct covering gate, oldest first, as many parts as possible
    (augmenting paths, so an early choice never blocks a later part needlessly)."""
    covering = [[g for g, gate in enumerate(gates) if covers(str(gate.get("text", "")), p)] for p in parts]
    owner: dict[int, int] = {}  # gate index -> part index

    def assign(p: int, seen: set[int]) -> bool:
        for g in covering[p]:
            if g in seen:
                continue
            seen.add(g)
            if g not in owner or assign(owner[g], seen):
                owner[g] = p
                return True
        return False

    for p in range(len(parts)):
        assign(p, set())
    return {p: g for g, p in owner.items()}


def guard(command: str, patterns: Sequence[str], approved: Sequence[Mapping]) -> tuple[str | None, list[str]]:
    """Decide whether `command` may run: (refusal message or None, ids of the gates it uses).

    Each part that matches a gateRequired pattern needs its own approved gate naming it; a gate
    is used at most once, and the caller should retire the returned ids. Nothing is consumed
    when the command is refused. A command the lexer cannot analyse is refused only when its raw
    text mentions a pattern's first word, unless an approved gate names it exactly as written."""
    patterns = [p for p in patterns if p.strip()]
    if not patterns:
        return None, []
    gates = list(approved)
    try:
        required = required_parts(command, patterns)
    except UnparseableCommand as e:
        if not _could_match(command, patterns):
            return None, []
        for gate in gates:
            if covers(str(gate.get("text", "")), command):
                return None, [str(gate.get("id"))]
        return f"Refused: {e}", []
    first_pattern: dict[str, str] = {}
    for part, pat in required:
        first_pattern.setdefault(part, pat)  # one gate per distinct part, even if repeated
    parts = list(first_pattern)
    if not parts:
        return None, []
    matched = _match_gates(parts, gates)
    missing = [p for i, p in enumerate(parts) if i not in matched]
    if missing:
        lines = [f"- `{p}` matches gateRequired pattern {first_pattern[p]!r}" for p in missing]
        example = missing[0]
        return (
            "Refused: this command needs an approved gate first.\n"
            + "\n".join(lines)
            + '\nPost kind=gate whose text names this exact command (for example: "I need to '
            f'run `{example}` because ..."). Once the gate is approved, run the command '
            "again; each approved gate covers the command it names once."
        ), []
    return None, [str(gates[matched[i]].get("id")) for i in range(len(parts))]
