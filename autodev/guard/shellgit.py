"""What a git command runs inside it, for `shellnested`: subcommand options whose value is a
shell command (`rebase -x`, `difftool -x`, `fetch --upload-pack`, `filter-branch --tree-filter`,
...), `bisect run` and `submodule foreach`, and `ext::` URLs (git's ext transport runs the command
the URL names, once `protocol.ext.allow` lets it).

git's own settings that run programs (`-c core.sshCommand=...`) are refused as opaque by
`shellwords.git_opaque`; here is only what the command line itself shows.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from autodev.guard.shellwords import GIT_OPTS_WITH_ARG, Part, UnparseableCommand, Walker, Word, option_values

if TYPE_CHECKING:
    Command = Callable[[Walker, tuple[Word, ...], list[Part]], None]

_FILTERS = frozenset(
    {
        "--env-filter",
        "--tree-filter",
        "--index-filter",
        "--parent-filter",
        "--msg-filter",
        "--commit-filter",
        "--tag-name-filter",
    }
)
# subcommand -> (short options, long options) whose value git runs with the shell
SCRIPT_OPTIONS: dict[str, tuple[str, frozenset[str]]] = {
    "rebase": ("x", frozenset({"--exec"})),
    "difftool": ("x", frozenset({"--extcmd"})),
    "fetch": ("", frozenset({"--upload-pack"})),
    "pull": ("", frozenset({"--upload-pack"})),
    "clone": ("u", frozenset({"--upload-pack"})),
    "ls-remote": ("u", frozenset({"--upload-pack"})),
    "fetch-pack": ("", frozenset({"--upload-pack", "--exec"})),
    "push": ("", frozenset({"--receive-pack", "--exec"})),
    "send-pack": ("", frozenset({"--receive-pack", "--exec"})),
    "archive": ("", frozenset({"--exec"})),
    "filter-branch": ("", _FILTERS),
    "send-email": (
        "",
        frozenset({"--to-cmd", "--cc-cmd", "--header-cmd", "--sendmail-cmd", "--smtp-server"}),
    ),
    "grep": ("O", frozenset({"--open-files-in-pager"})),
    "instaweb": ("db", frozenset({"--httpd", "--browser"})),
    "daemon": ("", frozenset({"--access-hook"})),
    "web--browse": ("b", frozenset({"--browser", "--cmd"})),
}
_SHELL_TEXT = re.compile(r"[\s|&;<>()$`\\\"'*?\[#~]")


def subcommand(words: tuple[Word, ...]) -> int:
    """The index of git's subcommand in `words` (after git's own options), or len(words)."""
    i = 1
    while i < len(words) and words[i].text.startswith("-"):
        i += 2 if words[i].text in GIT_OPTS_WITH_ARG else 1
    return i


def runs(walk: Walker, words: tuple[Word, ...], out: list[Part], command: Command) -> None:
    """Append the parts of what this git command line runs besides git itself."""
    for w in words[1:]:
        at = w.text.lower().find("ext::")
        if at >= 0:
            if w.dynamic:
                raise UnparseableCommand(f"the git URL `{w.raw}` is only known at run time", opaque=True)
            ext = ext_command(w.text[at + 5 :])
            if ext:
                command(walk, ext, out)
    i = subcommand(words)
    if i >= len(words):
        return
    sub, args = words[i].text, words[i + 1 :]
    if sub in SCRIPT_OPTIONS:
        short, long = SCRIPT_OPTIONS[sub]
        for value in option_values(args, short, long, stop_at_dashes=True):
            if value.dynamic:
                raise UnparseableCommand(
                    f"`git {sub}` is given a command only known at run time ({value.raw})", opaque=True
                )
            walk.nested(value.text, out)
    rest: tuple[Word, ...] = ()
    if sub == "bisect" and args and args[0].text == "run":
        rest = args[1:]
    elif sub == "submodule":
        k = next((n for n, w in enumerate(args) if w.text == "foreach"), None)
        if k is not None:
            rest = args[k + 1 :]
            while rest and rest[0].text in ("--recursive", "-q", "--quiet", "--"):
                rest = rest[1:]
    if rest:
        # git runs these words as a command; a first word with shell syntax runs as a script
        if rest[0].dynamic:
            raise UnparseableCommand(f"`git {sub}` runs a command only known at run time", opaque=True)
        command(walk, rest, out)
        if _SHELL_TEXT.search(rest[0].text):
            walk.nested(rest[0].text, out)


def ext_command(spec: str) -> tuple[Word, ...]:
    """The command an `ext::` URL runs, split the way git-remote-ext splits it: on unescaped
    spaces, `% ` a literal space, `%%` a percent sign, `%s`/`%S` the service's name, and an
    argument starting with `%G` or `%V` left out."""
    words: list[str] = []
    cur: list[str] = []
    drop = False
    i = 0
    while i < len(spec):
        c = spec[i]
        nxt = spec[i + 1 : i + 2]
        if c == "%" and nxt:
            if nxt in "GV" and not cur:
                drop = True
            cur.append({" ": " ", "%": "%", "s": "upload-pack", "S": "git-upload-pack"}.get(nxt, c + nxt))
            i += 2
            continue
        if c == " ":
            if cur and not drop:
                words.append("".join(cur))
            cur, drop = [], False
        else:
            cur.append(c)
        i += 1
    if cur and not drop:
        words.append("".join(cur))
    return tuple(Word(w, w) for w in words)
