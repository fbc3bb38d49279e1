"""docs/cli.md: every command, argument and option of `autodev`, generated from the Typer app.

`python -m autodev.cli.reference > docs/cli.md` regenerates it (`make docs` does); a test keeps
the committed file equal to this output, so the reference cannot drift from the code.
"""

from __future__ import annotations

import inspect
import types
import typing
from pathlib import Path

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

Cmd = TyperCommand | TyperGroup  # what autodev's Typer app is made of

_WORDS: dict[object, str] = {bool: "flag", int: "INTEGER", float: "NUMBER", str: "TEXT", Path: "PATH"}


def _type_word(annotation: object) -> str:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        return _type_word(args[0])
    if typing.get_origin(annotation) is list:
        return f"{_type_word(args[0])} ..."
    return _WORDS.get(annotation, getattr(annotation, "__name__", "TEXT").upper())


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def _default(param: TyperArgument | TyperOption) -> str:
    """The default worth stating: not for flags (off), and not for an absent value."""
    value = param.default
    if getattr(param, "is_flag", False) or value in (None, "", ()) or callable(value):
        return ""
    return f"`{value}`"


def _is_param(p: object, kind: str) -> bool:
    return getattr(p, "param_type_name", "") == kind and not getattr(p, "hidden", False)


def _usage(cmd: Cmd, path: str) -> str:
    words = [path, "[OPTIONS]"]
    for p in cmd.params:
        if _is_param(p, "argument"):
            name = p.name.upper()
            words.append(name if p.required else f"[{name}]")
    if isinstance(cmd, TyperGroup):
        words.append("COMMAND [ARGS]...")
    return " ".join(words)


def _section(cmd: Cmd, ctx: typer.Context, level: int) -> list[str]:
    path = ctx.command_path
    out = [
        f"{'#' * level} `{path}`",
        "",
        inspect.cleandoc(cmd.help or ""),
        "",
        "```text",
        _usage(cmd, path),
        "```",
        "",
    ]
    if cmd.epilog:  # what `--help` prints below the options
        out += [inspect.cleandoc(cmd.epilog), ""]
    arguments = [p for p in cmd.params if isinstance(p, TyperArgument) and _is_param(p, "argument")]
    if arguments:
        out += ["| argument | type | required | meaning |", "|---|---|---|---|"]
        for p in arguments:
            word = _type_word(p.type_descriptor.annotation)
            out.append(
                f"| `{p.name.upper()}` | {word} | {'yes' if p.required else 'no'} | {_cell(p.help or '')} |"
            )
        out.append("")
    options = [p for p in cmd.params if isinstance(p, TyperOption) and _is_param(p, "option")]
    if options:
        out += ["| option | value | default | meaning |", "|---|---|---|---|"]
        for p in options:
            flags = ", ".join(f"`{o}`" for o in [*p.opts, *p.secondary_opts])
            word = "" if p.is_flag else _type_word(p.type_descriptor.annotation)
            meaning = _cell(p.help or "") + (" Required." if p.required else "")
            out.append(f"| {flags} | {word} | {_default(p)} | {meaning} |")
        out.append("")
    return out


def _walk(cmd: Cmd, ctx: typer.Context, depth: int) -> list[str]:
    """`autodev` and its commands are level-2 headings (the page's table of contents lists them
    all); a group's own commands (`autodev runs stats`) nest one level below."""
    out = _section(cmd, ctx, 2 + max(depth - 1, 0))
    if isinstance(cmd, TyperGroup):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if isinstance(sub, Cmd) and not sub.hidden:
                out += _walk(sub, typer.Context(sub, info_name=name, parent=ctx), depth + 1)
    return out


def cli_markdown() -> str:
    from autodev.cli import app

    root = typer.main.get_command(app)
    assert isinstance(root, Cmd)
    lines = [
        "# CLI reference",
        "",
        "<!-- Generated from the Typer app in autodev/cli/ by",
        "     `python -m autodev.cli.reference > docs/cli.md` (`make docs` runs it);",
        "     do not edit by hand (a test keeps this file equal to the code). -->",
        "",
        "Every command, argument and option of `autodev`, as `autodev COMMAND --help` shows them.",
        "[Commands](commands.md) has the same commands at a glance, with what each one does to a run.",
        "",
        *_walk(root, typer.Context(root, info_name="autodev"), 0),
    ]
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    print(cli_markdown(), end="")
