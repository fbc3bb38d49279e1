"""The commands a simple command runs inside it, for `shellparse`: shells given `-c` scripts,
`eval`, `trap` and `alias` bodies, interpreters' code options, `runuser --`, `watch`, `xargs`,
`find -exec`, and git aliases given with `-c`.

Each such command becomes a part of its own (through the walker, for scripts), so the guard sees
`git push` inside `sh -c 'git push'` as it sees it on the line. What is only known at run time is
refused as opaque, never guessed.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from autodev.guard import runners, shellgit
from autodev.guard.shellgit import git_alias, git_opaque
from autodev.guard.shellwords import Part, UnparseableCommand, Walker, Word, basename, join
from autodev.guard.shellwrappers import (
    CODE_OPTIONS,
    FIND_EXEC,
    XARGS_LONG_WITH_ARG,
    XARGS_SHORT_WITH_ARG,
    option_values,
    skip_options,
    unwrap,
)

# csh-family and other shells are read as bash: a simple command is the same words in each, and
# what bash cannot parse is refused.
SHELLS = {
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "ash",
    "fish",
    "csh",
    "tcsh",
    "yash",
    "posh",
    "lksh",
    "oksh",
    "rbash",
}
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
# Files a shell reads its input through: `. /dev/stdin <<< 'script'` runs the here-string.
STDIN_FILES = {"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"}
# Programs that run commands the guard cannot read from their words (typed into a terminal,
# queued for later, templated): which arguments make them do so.
_UNREAD = {
    "tmux": re.compile(
        r"^(new(-session|-window|w)?|split(-window|w)|respawn(-pane|-window|p|w)|run(-shell)?|if(-shell)?"
        r"|send(-keys)?|pipe(-pane|p)|(display-)?popup)$"
    ),
    "screen": re.compile(r"^(?!-(ls|list|r|x|d|wipe|v|version)$).*"),
    "at": re.compile(r"^(?!-[lrdcV]$).*"),
    "batch": re.compile(r".*"),
    "parallel": re.compile(r"^(?!--?(version|help|V|h)$).*"),
}


def command(
    walk: Walker,
    words: tuple[Word, ...],
    out: list[Part],
    fed: bool = False,
    assigns: Sequence[str] = (),
    stdin: Word | None = None,
) -> None:
    """Append the part for `words` (with the chain of wrappers it unwraps to), then the parts of
    whatever it runs inside it. `stdin` is a here-string or here-document the command reads."""
    chain = [words]
    while (inner := unwrap(chain[-1])) is not None:
        chain.append(inner)
    inner = chain[-1]
    head = inner[0]
    if head.dynamic or head.glob or head.brace:
        raise UnparseableCommand(f"the command name `{head.raw}` is only known at run time", opaque=True)
    name = basename(head.text)
    script = None
    if name == "git":
        git_opaque(chain, assigns)
        alias, script = git_alias(inner)
        if alias is not None:
            chain.append(alias)
    out.append(Part(words, tuple(chain), fed))
    for wrapper in chain[:-1]:  # env A=B cmd, sudo A=B cmd: the same as A=B cmd
        for w in wrapper[1:]:
            if "=" in w.text and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w.text):
                name_, _, value = w.text.partition("=")
                assignment(walk, name_, Word(value, w.raw, w.dynamic), out)
    for words_ in chain:  # tar --to-command, ssh -o ProxyCommand, strace -o '|cmd', ...
        for code in runners.shell_code(words_):
            walk.nested(code.text, out)
    if name == "git":
        if script is not None:
            walk.nested(script, out)
        shellgit.runs(walk, chain[-1], out, command)
    if name in _UNREAD and any(_UNREAD[name].match(w.text) for w in inner[1:]):
        raise UnparseableCommand(f"`{name}` runs commands the guard cannot read from its words", opaque=True)
    _runs_inside(walk, name, inner, out, stdin)


def _runs_inside(
    walk: Walker, name: str, inner: tuple[Word, ...], out: list[Part], stdin: Word | None
) -> None:
    """The parts of what the command `inner` (named `name`, wrappers taken off) runs inside it."""
    if name in SHELLS:
        _shell(walk, inner, out, stdin)
    elif name in ("source", ".") and len(inner) > 1:
        _read_script(walk, name, inner[1], out, stdin)
    elif name == "capsh":  # capsh [options] -- ARGS runs /bin/bash ARGS
        dashes = next((k for k, w in enumerate(inner) if w.text == "--"), None)
        if dashes is not None:
            command(walk, (Word("bash", "bash"), *inner[dashes + 1 :]), out, stdin=stdin)
    elif name == "sg" and not option_values(inner[1:], *CODE_OPTIONS["sg"]):
        rest = [w for w in inner[1:] if w.text != "-"][1:]  # sg [-] GROUP command: run with sh -c
        _joined(walk, "sg", rest, out)
    elif name == "eval":
        args = inner[1:]
        if any(w.dynamic for w in args):
            raise UnparseableCommand(f"`eval` runs text computed at run time ({join(args)})", opaque=True)
        walk.nested(" ".join(w.text for w in args), out)
    elif name in ("trap", "alias"):
        _later(walk, name, inner, out)
    elif name in CODE_OPTIONS:
        _code_options(walk, name, inner, out)
    elif name == "watch":  # runs its arguments, joined, with sh -c
        _joined(walk, "watch", skip_options(inner[1:], "nd", {"--interval", "--differences"}), out)
    elif name == "xargs":
        _xargs(walk, inner, out)
    elif name == "find":
        _find_exec(walk, inner, out)


def _joined(walk: Walker, name: str, rest: Sequence[Word], out: list[Part]) -> None:
    """A command that runs its words joined by spaces with `sh -c` (`watch`, `sg GROUP cmd`)."""
    if any(w.dynamic for w in rest):
        raise UnparseableCommand(f"`{name}` runs a command computed at run time", opaque=True)
    if rest:
        walk.nested(" ".join(w.text for w in rest), out)


def _later(walk: Walker, name: str, inner: tuple[Word, ...], out: list[Part]) -> None:
    """A trap's handler runs later in this shell; an alias's value runs when it is used."""
    args = [w for w in inner[1:] if w.text not in ("-p", "-l", "-P", "--")]
    code = args[:1] if name == "trap" else [w for w in args if "=" in w.text or w.dynamic]
    for w in code:
        if w.dynamic:
            raise UnparseableCommand(f"`{name}` is given code computed at run time", opaque=True)
        if w.text != "-":
            walk.nested(w.text.split("=", 1)[1] if name == "alias" else w.text, out)


def _code_options(walk: Walker, name: str, inner: tuple[Word, ...], out: list[Part]) -> None:
    """`su -c 'script'`, `flock F -c 'script'`, ...; and `runuser -u user -- command`."""
    for code in option_values(inner[1:], *CODE_OPTIONS[name]):
        if code.dynamic:
            raise UnparseableCommand(f"`{name}` runs a command computed at run time", opaque=True)
        walk.nested(code.text, out)
    dashes = next((k for k, w in enumerate(inner) if w.text == "--"), None)
    if name == "runuser" and dashes is not None and dashes + 1 < len(inner):
        command(walk, inner[dashes + 1 :], out)


def _xargs(walk: Walker, inner: tuple[Word, ...], out: list[Part]) -> None:
    rest = skip_options(inner[1:], XARGS_SHORT_WITH_ARG, XARGS_LONG_WITH_ARG)
    token = _xargs_replace(inner[1 : len(inner) - len(rest)])
    if rest and token:  # -I{}: the input replaces {} inside the words, known at run time
        rest = tuple(Word(w.text, w.raw, True) if token in w.text else w for w in rest)
    if rest:
        command(walk, rest, out, fed=not token)


def _find_exec(walk: Walker, inner: tuple[Word, ...], out: list[Part]) -> None:
    """The commands of `find ... -exec CMD ... ;` (and `-execdir`, `-ok`, `-okdir`)."""
    i = 0
    while i < len(inner):
        if inner[i].text in FIND_EXEC:
            j = i + 1
            while j < len(inner) and inner[j].text not in (";", "+"):
                j += 1
            if j > i + 1:
                command(walk, inner[i + 1 : j], out)
            i = j
        i += 1


def assignment(walk: Walker, name: str, value: Word, out: list[Part]) -> None:
    """`GIT_EXTERNAL_DIFF='git push' git diff`, `export EDITOR=...`: a variable whose value a
    program runs is read as the script it is; one that loads unreadable code is opaque."""
    if name in ENV_SCRIPTS or name in ENV_PROGRAMS:
        if value.dynamic:
            raise UnparseableCommand(f"`{name}` is set to a command only known at run time", opaque=True)
        if value.text.strip():
            walk.nested(value.text if name in ENV_SCRIPTS else shlex.quote(value.text), out)
    elif why := runners.loads_code(name, value):
        raise UnparseableCommand(why, opaque=True)


def _read_script(walk: Walker, name: str, script: Word, out: list[Part], stdin: Word | None) -> None:
    """A shell reading its script from a file: through stdin, it is the here-string's text; a
    process substitution's output cannot be read. Other files are `opaque`'s business."""
    if script.raw.startswith(("<(", ">(")):
        raise UnparseableCommand(f"`{name}` runs the output of a command ({script.raw})", opaque=True)
    if script.text in STDIN_FILES:
        _stdin_script(walk, name, out, stdin)


def _stdin_script(walk: Walker, name: str, out: list[Part], stdin: Word | None) -> None:
    if stdin is None or stdin.dynamic:
        raise UnparseableCommand(f"`{name}` reads the commands it runs from its input", opaque=True)
    walk.nested(stdin.text, out)


def _shell(walk: Walker, words: tuple[Word, ...], out: list[Part], stdin: Word | None = None) -> None:
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
            walk.nested(rest[0].text, out)
    elif reads_stdin or not rest:
        _stdin_script(walk, join(words), out, stdin)
    else:
        _read_script(walk, join(words[:1]), rest[0], out, stdin)


def _xargs_replace(options: Sequence[Word]) -> str | None:
    """The string xargs -I/-i/--replace substitutes with its input, or None."""
    for k, w in enumerate(options):
        t = w.text
        if t == "-I" and k + 1 < len(options):
            return options[k + 1].text
        if t.startswith("-I") and len(t) > 2:
            return t[2:]
        if t.startswith(("--replace=", "-i")) and len(t) > len("-i"):
            return t.split("=", 1)[1] if t.startswith("--replace=") else t[2:]
        if t in ("-i", "--replace"):
            return "{}"
    return None
