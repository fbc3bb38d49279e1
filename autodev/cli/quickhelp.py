"""`autodev --help` without typer: importing typer, registering every command and building its
click group cost more than the 80 ms the help may take (issue 33).

What typer's rich help prints for the app (cli/full.py) is kept in `help.pickle` beside this
file: the rich renderables typer hands its console, captured once by `python -m
autodev.cli.quickhelp` (run it after changing a command's help; tests/test_quickhelp.py fails
while the file is stale). `show` prints them through a console made as typer makes its own, so
the width, colours and terminal detection are rich's, as they are for typer's help; only the
usage line is made here, with the program's name found as click finds it.

The file is used only while it matches the sources it was made from (the modules that make the
app, and the installed typer and rich); otherwise `show` says False and the Typer app prints the help.

What rich rendered is kept in `$AUTODEV_HOME/help.json` (user/rendered.py), by the sources'
key, help.pickle's bytes, the program's name and what rich reads of the terminal: the next
`--help` in the same terminal prints it without importing rich, whose import alone is most of
the 80 ms (issue 33). It is only a cache: a missing, cut or unwritable file makes the help
slower, not different.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from types import ModuleType

from autodev.user.rendered import Kept, installed, rendering_key

HERE = Path(__file__).resolve().parent
DATA = HERE / "help.pickle"
USAGE = "Usage: {prog} [OPTIONS] COMMAND [ARGS]..."
# typer.rich_utils's, which its console and highlighter use (tests/test_quickhelp.py keeps them equal)
THEME = {
    "option": "bold cyan",
    "switch": "bold green",
    "negative_option": "bold magenta",
    "negative_switch": "bold red",
    "types": "bold yellow",
    "types_sep": "dim",
    "usage": "yellow",
}
HIGHLIGHTS = [
    r"(^|\W)(?P<switch>\-\w+)(?![a-zA-Z0-9])",
    r"(^|\W)(?P<option>\-\-[\w\-]+)(?![a-zA-Z0-9])",
    r"(?P<types>\<[^\>]+\>)",
    r"(?P<usage>Usage: )",
]
USAGE_STYLE = "bold"
MEMO = "help.json"  # in $AUTODEV_HOME: the last renderings (user/rendered.py)


# The modules that make the Typer app (cli/full.py registers the commands of these): its help
# comes from them. tests/test_quickhelp.py compares the printed bytes too, whatever changed.
APP = ("root", "full", "setup", "start", "send", "look", "timeline", "evaluate", "trace")


def _key() -> str:
    """The sources the captured help comes from: the app's modules and the typer and rich installed."""
    h = hashlib.sha256()
    for name in APP:
        h.update(name.encode() + b"\0" + (HERE / f"{name}.py").read_bytes() + b"\0")
    for pkg in ("typer", "rich"):
        h.update(installed(pkg).encode())
    return h.hexdigest()


def program_name(main: ModuleType | None = None) -> str:
    """The program's name as click's `_detect_program_name` finds it: `autodev`, or `python -m
    autodev` when run as a module."""
    main = main if main is not None else sys.modules["__main__"]
    path = sys.argv[0]
    package = getattr(main, "__package__", None)
    if package in (None, ""):
        return os.path.basename(path)
    name = os.path.splitext(os.path.basename(path))[0]
    module = package if name == "__main__" else f"{package}.{name}"
    return f"python -m {module.lstrip('.')}"


def show() -> bool:
    """Print `autodev --help`; False (nothing printed) when help.pickle does not match the
    sources: then the Typer app prints it."""
    try:
        data = DATA.read_bytes()
    except FileNotFoundError:
        return False
    sources = _key()
    kept = _kept()
    seen = rendering_key(sources, data, program_name())
    if (text := kept.get(seen)) is None:
        text = _render(data, sources)
        if text is None:
            return False
        kept.put(seen, text)
    sys.stdout.write(text)
    print()  # click echoes the help typer returns, empty once rich printed it: one newline
    return True


def _render(data: bytes, sources: str) -> str | None:
    """The help as rich prints it on this terminal (its codes included); None when help.pickle
    was made from other sources."""
    import pickle

    key, parts = pickle.loads(data)
    if key != sources:
        return None
    from rich.console import Console
    from rich.highlighter import RegexHighlighter
    from rich.padding import Padding
    from rich.theme import Theme

    class Options(RegexHighlighter):
        highlights = HIGHLIGHTS

    # As typer.rich_utils._get_rich_console makes it, from the same environment variables.
    force = (
        True if os.getenv("GITHUB_ACTIONS") or os.getenv("FORCE_COLOR") or os.getenv("PY_COLORS") else None
    )
    if os.getenv("_TYPER_FORCE_DISABLE_TERMINAL"):
        force = False
    width = os.getenv("TERMINAL_WIDTH")
    console = Console(
        theme=Theme(THEME),
        highlighter=Options(),
        color_system="auto",
        force_terminal=force,
        width=int(width) if width else None,
    )
    with console.capture() as out:
        console.print(Padding(Options()(USAGE.format(prog=program_name())), 1), style=USAGE_STYLE)
        for args, kwargs in parts:
            console.print(*args, **kwargs)
    return out.get()


def _kept() -> Kept:
    from autodev.store.paths import autodev_home

    home = autodev_home()
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        pass  # only a cache: Kept.put leaves it unwritten and the next help renders again
    return Kept(home / MEMO)


def capture() -> bytes:
    """What typer's rich help hands its console for the app, but the usage line (its program
    name is the caller's), pickled with the key of the sources it came from."""
    import pickle

    import typer.rich_utils as ru
    from rich.padding import Padding

    from autodev.cli.full import app

    printed: list[tuple[tuple[object, ...], dict[str, object]]] = []
    make = ru._get_rich_console  # pyright: ignore[reportPrivateUsage]  # typer has no hook for the console its help prints on

    class Keep:
        def __init__(self, stderr: bool = False) -> None:
            self.console = make(stderr)

        def print(self, *args: object, **kwargs: object) -> None:
            printed.append((args, kwargs))

        def __getattr__(self, name: str) -> object:
            return getattr(self.console, name)

    ru._get_rich_console = Keep  # pyright: ignore[reportPrivateUsage]  # as above
    try:
        app(["--help"], prog_name="PROG", standalone_mode=False)
    finally:
        ru._get_rich_console = make  # pyright: ignore[reportPrivateUsage]  # as above
    usage, *parts = printed
    first = usage[0][0]  # rich_utils prints the usage line in a Padding
    assert isinstance(first, Padding) and str(first.renderable) == USAGE.format(prog="PROG"), usage
    assert usage[1] == {"style": USAGE_STYLE}, usage
    return pickle.dumps((_key(), parts), protocol=4)


if __name__ == "__main__":
    DATA.write_bytes(capture())
    print(f"wrote {DATA}")
