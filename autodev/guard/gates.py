"""Gate decisions and the `gateRequired` command guard.

Three jobs live here, as pure functions over parsed commands (`shellparse` splits a command line
into the simple commands it runs, from tree-sitter-bash's syntax tree):

- `decide` turns a declared gate's text into a decision (auto-deny, auto-approve, or ask the
  user), naming the rule that decided.
- `required_parts` matches each simple command against the `gateRequired` globs. Patterns match
  normalised commands: through wrappers (`sudo`, `env`, `timeout`, `xargs`, `find -exec`,
  `sh -c`), paths (`/usr/bin/git`), git's global options, git aliases given with `-c`, plumbing
  that pushes (`git send-pack`), and option spellings (`rm -fr`, `-Rf`, `-r -f` and
  `--recursive --force` are all `rm -rf`: short flags are a set, known long forms map to them).
- `guard` decides whether a command line may run: every part that matches a pattern, or that the
  guard cannot see into (`gateOpaque`), needs its own approved gate naming it.

What the guard is and is not: a guardrail against a participant running a gated command by
accident or casually wrapped, not a sandbox against a determined adversary (the sandbox is the
backstop). What it cannot see is listed in docs/security.md ("What the command guard can and
cannot see").
Patterns are globs (`fnmatch`), so `git push*` also matches `git pushy`; write `git push *` plus
`git push` for word-exact matching.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping, Sequence

from autodev.guard.opaque import opaque_parts, written_since
from autodev.guard.shellgit import GIT_OPTS_WITH_ARG
from autodev.guard.shellparse import parse
from autodev.guard.shellwords import Part, UnparseableCommand, Word, basename, join

__all__ = [
    "UnparseableCommand",
    "command_parts",
    "covers",
    "decide",
    "guard",
    "opaque_parts",
    "required_parts",
    "written_since",
]

# Long options (and short aliases) that mean a short flag, per command, so a pattern written
# with one spelling matches the others. A value of several letters means all of them (-D).
_OPTION_ALIASES: dict[str, dict[str, str]] = {
    "rm": {"R": "r", "--recursive": "r", "--force": "f", "--dir": "d", "--verbose": "v"},
    "cp": {"R": "r", "--recursive": "r", "--force": "f"},
    "mv": {"--force": "f"},
    "chmod": {"--recursive": "R"},
    "chown": {"--recursive": "R"},
    "chgrp": {"--recursive": "R"},
    "git push": {"--force": "f", "--delete": "d", "--dry-run": "n", "--set-upstream": "u", "--quiet": "q"},
    "git clean": {"--force": "f", "--dry-run": "n", "--quiet": "q", "--interactive": "i"},
    "git checkout": {"--force": "f", "--quiet": "q"},
    "git reset": {"--quiet": "q"},
    "git branch": {"D": "df", "M": "mf", "--delete": "d", "--force": "f", "--move": "m"},
    "git tag": {"--delete": "d", "--force": "f"},
}
# git subcommands that are another one under a different name.
_GIT_SAME_AS = {"send-pack": "push", "http-push": "push"}
_SHORT = re.compile(r"-[A-Za-z]+")
_LONG = re.compile(r"--[A-Za-z][A-Za-z0-9-]*")


def command_parts(command: str) -> list[str]:
    """The simple commands a shell command line would run, each normalised (words joined by one
    space, quotes removed unless a word needs them, leading VAR=value assignments and
    redirections dropped). A command that wraps another (`sh -c '...'`, `xargs cmd`, `$(...)`,
    `find -exec`) yields both. Raises UnparseableCommand when that cannot be determined."""
    return [p.text for p in parse(command)]


# -- normalised forms ----------------------------------------------------------------------------


def _forms(part: Part) -> list[tuple[tuple[Word, ...], bool]]:
    """The word lists a part is matched as, each with whether xargs feeds it more words."""
    found: dict[str, tuple[tuple[Word, ...], bool]] = {}
    for n, words in enumerate(part.chain):
        fed = part.fed and n == len(part.chain) - 1
        forms = [words]
        if "/" in words[0].text:  # /usr/bin/git push -> git push
            base = basename(words[0].text)
            forms.append((Word(base, base), *words[1:]))
        for f in list(forms):
            if basename(f[0].text) == "git":
                g = _git_variant(f)
                if g:
                    forms.append(g)
                    f = g
                if len(f) > 1 and f[1].text in _GIT_SAME_AS:
                    same = _GIT_SAME_AS[f[1].text]
                    forms.append((f[0], Word(same, same), *f[2:]))
        for f in forms:
            found.setdefault(join(f), (f, fed))
    return list(found.values())


def _git_variant(words: tuple[Word, ...]) -> tuple[Word, ...] | None:
    """`git -C repo --no-pager push` -> `git push`, so patterns need not list git's options."""
    i = 1
    while i < len(words) and not words[i].dynamic and words[i].text.startswith("-"):
        i += 2 if words[i].text in GIT_OPTS_WITH_ARG else 1
    return (words[0], *words[i:]) if i > 1 else None


def _normal(words: Sequence[str], *, pattern: bool = False) -> tuple[str, frozenset[str], list[str], bool]:
    """(command name, its flags as a set, its other words in order, whether a pattern's option
    word ended in `*`). Options stop at `--`; long forms known for the command map to letters."""
    head = basename(words[0]) if words else ""
    key = head
    if head == "git":
        sub = next((w for w in words[1:] if not w.startswith("-")), "")
        key = f"git {_GIT_SAME_AS.get(sub, sub).rstrip('*')}"
    aliases = _OPTION_ALIASES.get(key, {})
    flags: set[str] = set()
    rest: list[str] = []
    star = ended = False
    for w in words[1:]:
        if ended or w == "--":
            ended = True
            rest.append(w)
            continue
        core = w[:-1] if pattern and w.endswith("*") and len(w) > 2 else w
        if _SHORT.fullmatch(core):
            for ch in core[1:]:
                flags.update(aliases.get(ch, ch))
        elif _LONG.fullmatch(core):
            flags.update(aliases[core] if core in aliases else [core])
        else:
            rest.append(w)
            continue
        star |= core != w
    return head, frozenset(flags), rest, star


def _structured_match(words: Sequence[str], pattern: Sequence[str]) -> bool:
    ph, pflags, prest, pstar = _normal(pattern, pattern=True)
    ch, cflags, crest, _ = _normal(words)
    if not ph or not fnmatch.fnmatchcase(ch, ph) or not pflags <= cflags:
        return False
    p = " ".join([*prest, "*"] if pstar else prest)
    c = " ".join(crest)
    return fnmatch.fnmatchcase(c, p) or (p.endswith(" *") and fnmatch.fnmatchcase(c, p[:-2]))


def _matches(form: tuple[Word, ...], pattern: str) -> bool:
    text = join(form)
    if fnmatch.fnmatchcase(text, pattern):
        return True
    if any(w.dynamic for w in form):
        return False
    return _structured_match([w.text for w in form], pattern.split())


def _could_become(fixed: tuple[Word, ...], pattern: str) -> bool:
    """Whether a form whose words after `fixed` are only known at run time may match."""
    if not fixed:
        return True
    joined = join(fixed) + " "
    lit = _literal_prefix(pattern)
    if joined.startswith(lit) or lit.startswith(joined):
        return True
    ph, _, prest, _ = _normal(pattern.split(), pattern=True)
    ch, _, crest, _ = _normal([w.text for w in fixed])
    if not fnmatch.fnmatchcase(ch, ph):
        return False
    c = " ".join(crest) + " " if crest else ""
    lit = _literal_prefix(" ".join(prest))
    return c.startswith(lit) or lit.startswith(c)


def _norm_pattern(pattern: str) -> str:
    return " ".join(pattern.split())


def _literal_prefix(pattern: str) -> str:
    m = re.search(r"[*?\[]", pattern)
    return pattern[: m.start()] if m else pattern


def required_parts(command: str, patterns: Sequence[str]) -> list[tuple[str, str]]:
    """Every (part, pattern) where a part of `command` matches a gateRequired glob.

    A part matches through wrappers, paths, git's global options and aliases, and option
    spellings (see the module docstring). A part with a word computed at run time (`git $X
    origin`), or fed words by xargs (`... | xargs git`), whose fixed words could still lead to a
    pattern raises UnparseableCommand."""
    return _required(parse(command), patterns)


def _required(parts: list[Part], patterns: Sequence[str]) -> list[tuple[str, str]]:
    pats = [(p, _norm_pattern(p)) for p in patterns if p.strip()]
    found: list[tuple[str, str]] = []
    for part in parts:
        forms = _forms(part)
        for original, pat in pats:
            if any(_matches(f, pat) for f, _ in forms):
                found.append((part.text, original))
                continue
            for f, fed in forms:
                k = next((n for n, w in enumerate(f) if w.dynamic or w.brace), len(f) if fed else None)
                if k is None or not _could_become(f[:k], pat):
                    continue
                what = f[k].raw if k < len(f) else "the words xargs reads from its input"
                raise UnparseableCommand(
                    f"`{part.text}` has a word only known at run time ({what}), so it "
                    f"may or may not match gateRequired pattern {original!r}",
                    opaque=k == len(f),
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


def _match_gates(parts: list[str], gates: list[Mapping[str, object]]) -> dict[int, int]:
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


def guard(
    command: str,
    patterns: Sequence[str],
    approved: Sequence[Mapping[str, object]],
    *,
    opaque: str = "allow",
    written: Callable[[str], bool | None] | None = None,
) -> tuple[str | None, list[str]]:
    """Decide whether `command` may run: (refusal message or None, ids of the gates it uses).

    Each part that matches a gateRequired pattern needs its own approved gate naming it; a gate
    is used at most once, and the caller should retire the returned ids. Nothing is consumed
    when the command is refused. With `opaque="gated"` (config gateOpaque), a part the guard
    cannot see into (`opaque_parts`) needs a gate the same way, and so does a command line the
    parser cannot analyse, named exactly as written. With `"allow"`, such a part or line is refused
    only when its text mentions a pattern's first word. No patterns: the guard is off."""
    if opaque not in ("gated", "allow"):
        raise ValueError(f"gateOpaque must be 'gated' or 'allow', not {opaque!r}")
    patterns = [p for p in patterns if p.strip()]
    if not patterns:
        return None, []
    gates = list(approved)
    try:
        parts = parse(command)
        required = _required(parts, patterns)
    except UnparseableCommand as e:
        if opaque == "allow" and not _could_match(command, patterns):
            return None, []
        for gate in gates:
            if covers(str(gate.get("text", "")), command):
                return None, [str(gate.get("id"))]
        return f"Refused: {e}", []
    reasons: dict[str, str] = {}
    for part, pat in required:
        reasons.setdefault(part, f"matches gateRequired pattern {pat!r}")  # one gate per distinct part
    for part, why in opaque_parts(parts, written, command):
        if opaque == "gated":
            reasons.setdefault(part, f'runs code the guard cannot see ({why}; gateOpaque is "gated")')
        elif _could_match(part, patterns):  # "allow", as for an unreadable line
            reasons.setdefault(
                part, f"runs code the guard cannot see ({why}) and names a gateRequired command"
            )
    needed = list(reasons)
    if not needed:
        return None, []
    matched = _match_gates(needed, gates)
    missing = [p for i, p in enumerate(needed) if i not in matched]
    if missing:
        lines = [f"- `{p}` {reasons[p]}" for p in missing]
        example = missing[0]
        return (
            "Refused: this command needs an approved gate first.\n"
            + "\n".join(lines)
            + '\nPost kind=gate whose text names this exact command (for example: "I need to '
            f'run `{example}` because ..."). Once the gate is approved, run the command '
            "again; each approved gate covers the command it names once."
        ), []
    return None, [str(gates[matched[i]].get("id")) for i in range(len(needed))]


def tool_guard(
    tool: str, patterns: Sequence[str], approved: Sequence[Mapping[str, object]]
) -> tuple[str | None, list[str]]:
    """Decide whether the tool `tool` may be called: (refusal message or None, ids of the gates it
    uses). A tool matching a gateRequiredTools glob needs an approved gate whose text names it;
    one gate covers one call."""
    pattern = next((p for p in patterns if p.strip() and fnmatch.fnmatchcase(tool, p)), None)
    if pattern is None:
        return None, []
    named = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(tool)}(?![A-Za-z0-9_])")
    for gate in approved:
        if named.search(str(gate.get("text", ""))):
            return None, [str(gate.get("id"))]
    return (
        f"Refused: {tool} matches gateRequiredTools pattern {pattern!r}, so it needs an approved gate "
        f'first. Post kind=gate whose text names the tool (for example: "I need to call `{tool}` '
        'because ..."). Once the gate is approved, call it again; each approved gate covers one call.'
    ), []
