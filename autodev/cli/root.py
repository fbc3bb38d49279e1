"""The Typer app; the edge where typed errors become a message and a fix, and finding the run, are
edge.py (the steering commands' quick path shares them without importing typer)."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import types
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import TracebackType

    from rich.markdown import Markdown
    from rich.style import StyleType
    from rich.traceback import Traceback

from autodev.cli.edge import current_paths, guarded, version_line

__all__ = ["current_paths", "app", "main"]

app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Run a team of LLM participants on this git repository.",
    epilog=(
        "Offline, without a model: `autodev demo` runs a scripted team; `autodev-scripted SCRIPT.toml` "
        "serves a scripted OpenAI-compatible model for your own teams (`--help` there)."
    ),
)


def _flags_without_type() -> None:
    """typer 0.29 prints `<bool>` beside every flag (`--json <bool>`), as if it took a value:
    flags show no type."""
    from typer.core import TyperOption

    shown = TyperOption.display_type_rich

    def display_type_rich(self: TyperOption, ctx: typer.Context) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    # typer's own method replaced on its class (the edge: typer has no setting for it)
    TyperOption.display_type_rich = display_type_rich  # pyright: ignore[reportAttributeAccessIssue]


_flags_without_type()


class _Markdown:
    """Stands in for rich's Markdown in typer.rich_utils: this app's help is rich markup, never
    Markdown; should typer ever ask for one, it gets the real thing."""

    def __new__(cls, markup: str, style: StyleType = "none") -> Markdown:
        from rich.markdown import Markdown

        return Markdown(markup, style=style)


class _Traceback:
    """Stands in for rich's Traceback in typer.rich_utils (pretty exceptions are off)."""

    @classmethod
    def from_exception(  # rich's own options, the ones typer passes
        cls,
        exc_type: type[BaseException],
        exc_value: BaseException,
        traceback: TracebackType | None,
        *,
        width: int | None = 100,
        code_width: int | None = 88,
        word_wrap: bool = False,
        show_locals: bool = False,
        suppress: Iterable[str | types.ModuleType] = (),
    ) -> Traceback:
        from rich.traceback import Traceback

        return Traceback.from_exception(
            exc_type,
            exc_value,
            traceback,
            width=width,
            code_width=code_width,
            word_wrap=word_wrap,
            show_locals=show_locals,
            suppress=suppress,
        )


class _LeanHelp(importlib.abc.MetaPathFinder):
    """typer.rich_utils, which prints `--help` and usage errors, imports rich's Markdown
    (markdown-it, pygments) and Traceback (attrs) as it loads: over a quarter of `autodev --help`
    (issue 33), for markup and tracebacks this app never uses. While it loads, those two modules
    are stand-ins (_Markdown, _Traceback); nothing else in the process sees them."""

    STANDINS = {"rich.markdown": ("Markdown", _Markdown), "rich.traceback": ("Traceback", _Traceback)}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != "typer.rich_utils":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        real = spec.loader
        standins = {n: v for n, v in self.STANDINS.items() if n not in sys.modules}

        class Loader(importlib.abc.Loader):
            def create_module(self, spec: ModuleSpec) -> types.ModuleType | None:
                return real.create_module(spec)

            def exec_module(self, module: types.ModuleType) -> None:
                for name, (attr, standin) in standins.items():
                    stub = types.ModuleType(name)
                    setattr(stub, attr, standin)
                    sys.modules[name] = stub
                try:
                    real.exec_module(module)
                finally:
                    for name in standins:
                        sys.modules.pop(name, None)

        spec.loader = Loader()
        return spec


if "typer.rich_utils" not in sys.modules:
    sys.meta_path.insert(0, _LeanHelp())


def _version(value: bool) -> None:
    if value:
        print(version_line())
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_version,
        is_eager=True,
        help="Print the version and the Python it runs on.",
    ),
):
    """Run a team of LLM participants on this git repository."""


def main() -> None:
    """The Typer app, every command registered (autodev.cli.full does), behind the error edge."""
    guarded(app)
