"""The words and simple commands a shell command line is made of, and the rules for commands
that run other commands (`sudo`, `env`, `timeout`, git aliases and settings, ...).

`shellparse` reads a command line into these; `gates` matches them against patterns.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
_NEEDS_QUOTES = re.compile(r"[\s'\"\\;&|()<>$`]")
QUOTED = "\0"  # stands for quoted text in the unquoted skeleton of a word

# Wrappers that run the rest of their arguments as a command:
# name -> (short options taking an argument, long options taking a separate argument,
#          positional arguments before the command, whether VAR=value words may precede it)
WRAPPERS: dict[str, tuple[str, frozenset[str], int, bool]] = {
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
    "doas": ("uC", frozenset(), 0, False),
    "setsid": ("", frozenset(), 0, False),
    "ionice": ("cnp", frozenset({"--class", "--classdata", "--pid"}), 0, False),
    "coproc": ("", frozenset(), 0, False),
    "chroot": ("", frozenset({"--userspec", "--groups"}), 1, False),
    "strace": ("abeEIoOpPsSuUX", frozenset(), 0, False),
    "ltrace": ("aeEnopsSuUx", frozenset(), 0, False),
    "valgrind": ("", frozenset(), 0, False),
    "unbuffer": ("", frozenset(), 0, False),
    "xvfb-run": ("enpsfw", frozenset(), 0, False),
    "dbus-run-session": ("", frozenset({"--config-file", "--dbus-daemon"}), 0, False),
    "unshare": ("", frozenset({"--setuid", "--setgid", "--root", "--wd"}), 0, False),
    "builtin": ("", frozenset(), 0, False),
    "taskset": ("", frozenset(), 1, False),  # taskset [-a] [-c] MASK command
    "chrt": ("TPD", frozenset({"--sched-runtime", "--sched-period", "--sched-deadline"}), 0, False),
    "numactl": (
        "CNmipPwL",
        frozenset(
            {
                "--physcpubind",
                "--cpunodebind",
                "--membind",
                "--interleave",
                "--preferred",
                "--preferred-many",
                "--weighted-interleave",
            }
        ),
        0,
        False,
    ),
    "prlimit": ("po", frozenset({"--pid", "--output"}), 0, False),
    "nsenter": ("tSG", frozenset({"--target", "--setuid", "--setgid"}), 0, False),
    "cgexec": ("g", frozenset(), 0, False),
    "faketime": ("pf", frozenset(), 1, False),  # faketime [-f] TIMESTAMP command
    "torsocks": ("upaP", frozenset({"--user", "--pass", "--address", "--port"}), 0, False),
    "proxychains": ("f", frozenset(), 0, False),
    "proxychains4": ("f", frozenset(), 0, False),
    "fakeroot": ("lisb", frozenset({"--lib", "--faked"}), 0, False),
    "eatmydata": ("", frozenset(), 0, False),
    "nocache": ("n", frozenset(), 0, False),
    "catchsegv": ("", frozenset(), 0, False),
    "ssh-agent": ("aEPtO", frozenset(), 0, False),
    "dbus-launch": ("", frozenset({"--config-file"}), 0, False),
    "setpriv": (
        "",
        frozenset({"--reuid", "--regid", "--groups", "--inh-caps", "--ambient-caps", "--bounding-set"}),
        0,
        False,
    ),
    "pkexec": ("", frozenset({"--user"}), 0, False),
    "firejail": ("", frozenset(), 0, False),
    "systemd-run": (
        "puEMHd",
        frozenset({"--unit", "--property", "--setenv", "--machine", "--host", "--uid", "--gid", "--slice"}),
        0,
        False,
    ),
    "chpst": ("uUbe/nlLmdofpcrt", frozenset(), 0, False),
    "trickle": ("dutwlnL", frozenset(), 0, False),
    "cpulimit": ("lpe", frozenset({"--limit", "--pid", "--exe"}), 0, False),
    "linux32": ("", frozenset(), 0, False),
    "linux64": ("", frozenset(), 0, False),
    "busybox": ("", frozenset(), 0, False),
    "runcon": ("urtl", frozenset({"--user", "--role", "--type", "--range"}), 0, False),
    "flock": ("wEn", frozenset({"--timeout", "--wait", "--conflict-exit-code"}), 1, False),
}
# Wrappers whose options come after a first positional (`setarch ARCH [options] command`).
LEADING_POSITIONAL: dict[str, tuple[str, frozenset[str]]] = {"setarch": ("", frozenset())}
# Commands that run a shell command given as the argument of an option:
# name -> (short options, long options).
CODE_OPTIONS: dict[str, tuple[str, frozenset[str]]] = {
    "su": ("c", frozenset({"--command", "--session-command"})),
    "runuser": ("c", frozenset({"--command", "--session-command"})),
    "sg": ("c", frozenset()),
    "flock": ("c", frozenset({"--command"})),
    "script": ("c", frozenset({"--command"})),
}
GIT_OPTS_WITH_ARG = {
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--exec-path",
    "--super-prefix",
    "--config-env",
}
# git settings that make git run a program or read settings from elsewhere: code the guard
# cannot see, whether given with -c, --config-env, GIT_CONFIG_* or written by `git config`.
_GIT_RUNS = re.compile(
    r"^(core\.(hookspath|sshcommand|fsmonitor|pager|editor|askpass|gitproxy|alternaterefscommand)"
    r"|sequence\.editor|diff\.external|credential\..*helper|gpg\.program|gpg\.\w+\.program|include\.path"
    r"|includeif\..*|pager\..*|filter\..*|merge\..*\.driver|diff\..*\.(command|textconv)"
    r"|uploadpack\.packobjectshook|remote\..*\.(receivepack|uploadpack|vcs)|url\..*"
    r"|protocol\..*|(diff|merge)tool\..*\.(cmd|path)|interactive\.difffilter|imap\.tunnel"
    r"|sendemail\..*|instaweb\..*|web\.browser|browser\..*|man\..*|guitool\..*|init\.templatedir"
    r"|submodule\..*\.update)$",
    re.I,
)
# Environment that makes git read settings or programs the command line does not show.
_GIT_ENV = re.compile(
    r"^GIT_(CONFIG\w*|EXEC_PATH|DIR|COMMON_DIR|ALLOW_PROTOCOL|TEMPLATE_DIR|PROTOCOL_FROM_USER)$"
)
# Environment whose value is a shell command some program runs (git, pagers, editors): the
# guard reads the value as a script. Those holding one program (no shell) are read as one word.
ENV_SCRIPTS = frozenset(
    {
        "GIT_EXTERNAL_DIFF",
        "GIT_SSH_COMMAND",
        "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR",
        "GIT_PAGER",
        "GIT_PROXY_COMMAND",
        "PAGER",
        "MANPAGER",
        "EDITOR",
        "VISUAL",
        "PROMPT_COMMAND",
    }
)
ENV_PROGRAMS = frozenset({"GIT_SSH", "GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS"})
XARGS_SHORT_WITH_ARG = "adEILnPs"
XARGS_LONG_WITH_ARG = {
    "--arg-file",
    "--delimiter",
    "--max-args",
    "--max-chars",
    "--max-lines",
    "--max-procs",
    "--process-slot-var",
}
FIND_EXEC = {"-exec", "-execdir", "-ok", "-okdir"}


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


# -- wrappers ------------------------------------------------------------------------------------


def skip_options(
    words: Sequence[Word], short_arg: str, long_arg: set[str] | frozenset[str], assignments: bool = False
) -> tuple[Word, ...]:
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


def unwrap(words: tuple[Word, ...]) -> tuple[Word, ...] | None:
    """`sudo -u x git push` -> `git push`; None when the first word is not a wrapper."""
    head = words[0]
    name = basename(head.text) if not head.dynamic else ""
    if name in LEADING_POSITIONAL:
        short_arg, long_arg = LEADING_POSITIONAL[name]
        return skip_options(words[2:], short_arg, long_arg) or None
    spec = WRAPPERS.get(name)
    if spec is None or (name == "command" and any(w.text in ("-v", "-V") for w in words[1:2])):
        return None  # `command -v make` only says where make is
    short_arg, long_arg, positionals, assignments = spec
    if name == "env":
        for w in words[1:]:
            if w.text.startswith("--split-string") or re.match(r"-[^-]*S", w.text):
                raise UnparseableCommand("`env -S` (split string) is not analysed")
            if not w.text.startswith("-"):
                break
    rest = skip_options(words[1:], short_arg, long_arg, assignments)
    if name == "flock" and _flock_script(words[1 : len(words) - len(rest)], rest):
        return None  # flock's script is read by shellnested
    if name == "chrt" or (name == "runcon" and len(rest) == len(words) - 1):
        # chrt's priority may be left out; runcon without options takes a CONTEXT first
        positionals = 1 if name == "runcon" or (rest and re.fullmatch(r"\d+", rest[0].text)) else 0
    return rest[positionals:] or None


def _flock_script(own: Sequence[Word], rest: Sequence[Word]) -> bool:
    """Whether flock runs a script (`flock FILE -c 'script'`). flock reads `-c` only right after
    FILE; a `-c` further on is the command's own (`flock FILE ionice -c 3 git push`). One among
    flock's own options is taken as a script too, though flock refuses it: the guard errs on the
    side of reading more."""
    if len(rest) > 1 and rest[1].text in ("-c", "--command"):
        return True
    return any(
        w.text.startswith("--command")
        or (w.text.startswith("-") and not w.text.startswith("--") and "c" in w.text)
        for w in own
    )


def option_values(
    words: Sequence[Word], short: str, long: set[str] | frozenset[str], *, stop_at_dashes: bool = False
) -> list[Word]:
    """The values given to options that take one, in every spelling getopt accepts: `-x V`,
    `-xV`, clustered `-qx V`, `--exec V`, `--exec=V` and a unique prefix of it (`--exe=V`)."""
    found: list[Word] = []
    i = 0
    while i < len(words):
        w = words[i]
        t = w.text
        nxt = words[i + 1] if i + 1 < len(words) else None
        if t == "--" and stop_at_dashes:
            break
        if t.startswith("--") and len(t) > 3:
            key, eq, value = t.partition("=")
            if any(opt == key or (len(key) > 3 and opt.startswith(key)) for opt in long):
                if eq:
                    found.append(Word(value, w.raw, w.dynamic))
                elif nxt is not None:
                    found.append(nxt)
                    i += 1
        elif t.startswith("-") and not t.startswith("--") and len(t) > 1:
            for j, ch in enumerate(t[1:], 1):
                if ch in short:
                    if j < len(t) - 1:
                        found.append(Word(t[j + 1 :], w.raw, w.dynamic))
                    elif nxt is not None:
                        found.append(nxt)
                        i += 1
                    break
        i += 1
    return found


def git_alias(words: tuple[Word, ...]) -> tuple[tuple[Word, ...] | None, str | None]:
    """`git -c alias.p=push p origin` runs `git push origin`: (the expanded words, None); a `!`
    alias runs shell code: (None, the script)."""
    aliases: dict[str, str] = {}
    i = 1
    while i < len(words) and words[i].text.startswith("-"):
        t = words[i].text
        setting = (
            words[i + 1].text if t == "-c" and i + 1 < len(words) else t[2:] if t.startswith("-c") else ""
        )
        key, _, value = setting.partition("=")
        if key.lower().startswith("alias."):
            aliases[key[6:].lower()] = value
        i += 2 if t in GIT_OPTS_WITH_ARG else 1
    if i >= len(words) or words[i].text.lower() not in aliases:
        return None, None
    value = aliases[words[i].text.lower()]
    if value.startswith("!"):
        return None, value[1:] + " " + " ".join(shlex.quote(w.text) for w in words[i + 1 :])
    try:
        expanded = [Word(t, t) for t in shlex.split(value)]
    except ValueError:
        raise UnparseableCommand(f"the git alias `{words[i].text}` cannot be read", opaque=True) from None
    if not expanded:
        return None, None
    return (words[0], *words[1:i], *expanded, *words[i + 1 :]), None


def git_opaque(chain: list[tuple[Word, ...]], assigns: Sequence[str]) -> None:
    """Refuse git invocations whose settings run programs the command line does not show."""
    for text in [*assigns, *(w.text for words in chain for w in words)]:
        if "=" in text and _GIT_ENV.match(text.split("=", 1)[0]):
            raise UnparseableCommand(f"`{text}` changes which programs git runs", opaque=True)
    words = chain[-1]
    i = 1
    while i < len(words) and words[i].text.startswith("-"):
        t = words[i].text
        nxt = words[i + 1].text if i + 1 < len(words) else ""
        setting = nxt if t in ("-c", "--config-env") else t[2:] if t.startswith("-c") else ""
        if t.startswith("--config-env="):
            setting = t.split("=", 1)[1]
        key = setting.split("=", 1)[0]
        if _GIT_RUNS.match(key) or (t.startswith("--config-env") and key.lower().startswith("alias.")):
            raise UnparseableCommand(f"git setting `{key}` makes git run a program", opaque=True)
        if t in ("--exec-path",) or t.startswith("--exec-path="):
            raise UnparseableCommand("`--exec-path` makes git run programs from elsewhere", opaque=True)
        i += 2 if t in GIT_OPTS_WITH_ARG else 1
    if i < len(words) and words[i].text == "config":
        args = [w.text for w in words[i + 1 :]]
        for k, a in enumerate(args):
            if (a.lower().startswith("alias.") or _GIT_RUNS.match(a)) and k + 1 < len(args):
                raise UnparseableCommand(f"`git config {a} ...` changes what git runs", opaque=True)


class Walker(Protocol):
    """What the readers of nested commands (`shellnested`, `shellgit`) need from the syntax-tree
    walker (`shellparse`): the parts of a script a command runs inside it, read one level deeper."""

    def nested(self, script: str, out: list[Part]) -> None: ...
