"""Commands that run the rest of their words as a command (`sudo`, `env`, `timeout`, `nice`,
...), commands that run a shell command given as an option's value (`su -c`, `flock -c`), and how
options are read: skipped up to the command (`skip_options`, `unwrap`) or their values collected
in every spelling getopt accepts (`option_values`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from autodev.guard.shellwords import UnparseableCommand, Word, basename

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
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
