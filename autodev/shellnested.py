"""The commands a simple command runs inside it, for `shellparse`: shells given `-c` scripts,
`eval`, `trap` and `alias` bodies, interpreters' code options, `runuser --`, `watch`, `xargs`,
`find -exec`, and git aliases given with `-c`.

Each such command becomes a part of its own (through the walker, for scripts), so the guard sees
`git push` inside `sh -c 'git push'` as it sees it on the line. What is only known at run time is
refused as opaque, never guessed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from autodev.shellwords import (
    CODE_OPTIONS,
    FIND_EXEC,
    XARGS_LONG_WITH_ARG,
    XARGS_SHORT_WITH_ARG,
    Part,
    UnparseableCommand,
    Word,
    basename,
    git_alias,
    git_opaque,
    join,
    skip_options,
    unwrap,
)

if TYPE_CHECKING:
    from autodev.shellparse import _Walker

SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"}


def command(
    walk: _Walker, words: tuple[Word, ...], out: list[Part], fed: bool = False, assigns: Sequence[str] = ()
) -> None:
    """Append the part for `words` (with the chain of wrappers it unwraps to), then the parts of
    whatever it runs inside it."""
    chain = [words]
    while (inner := unwrap(chain[-1])) is not None:
        chain.append(inner)
    inner = chain[-1]
    head = inner[0]
    if head.dynamic or head.glob or head.brace:
        raise UnparseableCommand(f"the command name `{head.raw}` is only known at run time", opaque=True)
    name = basename(head.text)
    if name == "git":
        git_opaque(chain, assigns)
        alias, script = git_alias(inner)
        if alias is not None:
            chain.append(alias)
    out.append(Part(words, tuple(chain), fed))
    if name == "git" and script is not None:
        walk.nested(script, out)
    if name in SHELLS:
        _shell(walk, inner, out)
    elif name == "eval":
        args = inner[1:]
        if any(w.dynamic for w in args):
            raise UnparseableCommand(f"`eval` runs text computed at run time ({join(args)})", opaque=True)
        walk.nested(" ".join(w.text for w in args), out)
    elif name in ("trap", "alias"):
        # a trap's handler runs later in this shell; an alias's value runs when it is used
        args = [w for w in inner[1:] if w.text not in ("-p", "-l", "-P", "--")]
        code = args[:1] if name == "trap" else [w for w in args if "=" in w.text or w.dynamic]
        for w in code:
            if w.dynamic:
                raise UnparseableCommand(f"`{name}` is given code computed at run time", opaque=True)
            if w.text != "-":
                walk.nested(w.text.split("=", 1)[1] if name == "alias" else w.text, out)
    elif name in CODE_OPTIONS:
        for k, w in enumerate(inner[:-1]):
            if w.text in CODE_OPTIONS[name]:
                code = inner[k + 1]
                if code.dynamic:
                    raise UnparseableCommand(f"`{name}` runs a command computed at run time", opaque=True)
                walk.nested(code.text, out)
        dashes = next((k for k, w in enumerate(inner) if w.text == "--"), None)
        if name == "runuser" and dashes is not None and dashes + 1 < len(inner):
            command(walk, inner[dashes + 1 :], out)  # runuser -u user -- command
    elif name == "watch":  # runs its arguments, joined, with sh -c
        rest = skip_options(inner[1:], "nd", {"--interval", "--differences"})
        if any(w.dynamic for w in rest):
            raise UnparseableCommand("`watch` runs a command computed at run time", opaque=True)
        if rest:
            walk.nested(" ".join(w.text for w in rest), out)
    elif name == "xargs":
        rest = skip_options(inner[1:], XARGS_SHORT_WITH_ARG, XARGS_LONG_WITH_ARG)
        token = _xargs_replace(inner[1 : len(inner) - len(rest)])
        if rest and token:  # -I{}: the input replaces {} inside the words, known at run time
            rest = tuple(Word(w.text, w.raw, True) if token in w.text else w for w in rest)
        if rest:
            command(walk, rest, out, fed=not token)
    elif name == "find":
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


def _shell(walk: _Walker, words: tuple[Word, ...], out: list[Part]) -> None:
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
        raise UnparseableCommand(f"`{join(words)}` reads the commands it runs from its input", opaque=True)


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
