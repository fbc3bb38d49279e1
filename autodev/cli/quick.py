"""The steering commands without typer: `autodev send "hi"` is typed many times an hour, and
importing typer and building the whole app costs more than the command itself (issue 33).

`run(argv)` takes the argument lists it understands exactly as the Typer app would (send, answer,
approve, deny, notice, pause, resume, stop, status, --version) and runs the same bodies (steer.py)
behind the same edge (edge.py), then exits as the app does. Anything else (a `--help`, an option
it does not know, a missing or extra argument, `--`, shell completion) returns, and the Typer
app parses it, so its usage errors and help stay the only ones.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable

from autodev.cli.edge import guarded, version_line

# command -> (how many arguments: least, most; options that take a value -> their name; flags)
Spec = tuple[int, int, dict[str, str], frozenset[str]]
NONE: frozenset[str] = frozenset()
COMMANDS: dict[str, Spec] = {
    "send": (0, 1, {"--file": "file", "-f": "file", "--run": "run"}, frozenset({"--all"})),
    "approve": (0, 1, {}, NONE),
    "deny": (0, 1, {"--reason": "reason"}, NONE),
    "answer": (2, 2, {}, NONE),
    "notice": (0, 0, {"--release": "release", "--hold": "hold"}, NONE),
    "pause": (0, 0, {}, NONE),
    "resume": (0, 0, {}, NONE),
    "stop": (0, 0, {}, NONE),
    "status": (0, 0, {"--run": "run"}, frozenset({"--json"})),
}


def parse(argv: list[str], spec: Spec) -> tuple[list[str], dict[str, str], set[str]] | None:
    """(arguments, options, flags), or None for anything the Typer app must parse itself.

    A value that starts with `-` (other than `-` alone), a repeated option, a short option with
    its value attached, `--`: all left to the app, which knows click's rules for them."""
    least, most, options, flags = spec
    args: list[str] = []
    opts: dict[str, str] = {}
    seen: set[str] = set()
    rest = iter(argv)
    for tok in rest:
        if tok == "--":
            return None
        if tok.startswith("-") and tok != "-":
            name, eq, value = tok.partition("=") if tok.startswith("--") else (tok, "", "")
            if name in flags and not eq and name not in seen:
                seen.add(name)
                continue
            if name not in options or options[name] in opts:
                return None
            if not eq:
                value = next(rest, None)
                if value is None or (value.startswith("-") and value != "-"):
                    return None
            opts[options[name]] = value
            continue
        args.append(tok)
    if not least <= len(args) <= most:
        return None
    return args, opts, seen


def _completing() -> bool:
    """Shell completion asks through `_<PROG>_COMPLETE`: the Typer app answers it."""
    return any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ)


def run(argv: list[str]) -> None:
    """Run `argv` here and exit, or return when the Typer app must take it."""
    if _completing() or not argv:
        return
    if argv == ["--version"]:
        print(version_line())
        sys.exit(0)
    if argv == ["--help"]:
        from autodev.cli import quickhelp

        if quickhelp.show():  # else help.pickle is stale: the Typer app prints it
            sys.exit(0)
        return
    spec = COMMANDS.get(argv[0])
    parsed = parse(argv[1:], spec) if spec is not None else None
    if parsed is None:
        return
    args, opts, flags = parsed
    from autodev.cli import steer

    name = argv[0]
    calls: dict[str, Callable[[], None]] = {
        "send": lambda: steer.send(
            args[0] if args else None, opts.get("file"), "--all" in flags, opts.get("run")
        ),
        "approve": lambda: steer.approve(args[0] if args else None),
        "deny": lambda: steer.deny(args[0] if args else None, opts.get("reason", "")),
        "answer": lambda: steer.answer(args[0], args[1]),
        "notice": lambda: steer.notice(opts.get("release"), opts.get("hold")),
        "pause": lambda: steer.control("pause"),
        "resume": lambda: steer.control("resume"),
        "stop": lambda: steer.control("stop"),
        "status": lambda: steer.status("--json" in flags, opts.get("run")),
    }
    guarded(lambda: _as_the_app(calls[name]))


def _as_the_app(call: Callable[[], None]) -> None:
    """What typer's `_main` does around a command: Ctrl-C exits 130, end of input is "Aborted",
    a closed pipe exits 1 quietly, success exits 0."""
    try:
        call()
    except EOFError:
        print(file=sys.stderr)
        from typer import rich_utils

        rich_utils.rich_abort_error()
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    except OSError as e:
        if e.errno != errno.EPIPE:
            raise
        from typer._click.utils import PacifyFlushWrapper

        sys.stdout = PacifyFlushWrapper(sys.stdout)
        sys.stderr = PacifyFlushWrapper(sys.stderr)
        sys.exit(1)
    sys.exit(0)
