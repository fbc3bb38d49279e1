"""What a git command runs inside it, for `shellnested`: subcommand options whose value is a
shell command (`rebase -x`, `difftool -x`, `fetch --upload-pack`, `filter-branch --tree-filter`,
...), `bisect run` and `submodule foreach`, and `ext::` URLs (git's ext transport runs the command
the URL names, once `protocol.ext.allow` lets it).

Before those, what git's own options make it run: an alias given with `-c alias.x=...` is
expanded (`git_alias`; a `!` alias is a script), and settings or environment that make git run a
program the line does not show (`-c core.sshCommand=...`, `GIT_CONFIG_*`, `git config
alias.x ...`) are refused as opaque (`git_opaque`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from autodev.guard.shellwords import Part, UnparseableCommand, Walker, Word
from autodev.guard.shellwrappers import option_values

if TYPE_CHECKING:
    Command = Callable[[Walker, tuple[Word, ...], list[Part]], None]

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
