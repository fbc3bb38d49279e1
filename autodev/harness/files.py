"""The file tools: `read_file`, `list_files`, `write_file`, `edit_file` (the contract is in
`tools.py`). Each takes the participant's `Workspace`, which resolves paths safely and caps and
masks what comes back."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from autodev.errors import ToolError

if TYPE_CHECKING:
    from autodev.harness.tools import Workspace

LIST_CAP = 500
READ_LINE_CUT = 2000
BINARY_SNIFF = 8192


def _split_lines(text: str) -> list[str]:
    """Lines as editors and grep number them (a final newline does not start a new line)."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _looks_binary(data: bytes) -> bool:
    return b"\0" in data[:BINARY_SNIFF]


def read_file(ws: Workspace, path: str, offset: int, limit: int) -> str:
    real, rel = ws.resolve("read_file", path)
    if not os.path.exists(real):
        raise ToolError(f"read_file: no file '{rel}'; use list_files or search to find it")
    if os.path.isdir(real):
        raise ToolError(f"read_file: '{rel}' is a folder; use list_files(path='{rel}')")
    if not stat.S_ISREG(os.stat(real).st_mode):  # a FIFO or a device would block the turn
        raise ToolError(f"read_file: '{rel}' is not a regular file (a pipe, socket or device)")
    with open(real, "rb") as f:
        data = f.read()
    if _looks_binary(data):
        return f"{rel}: binary file ({len(data)} bytes); not shown"
    lines = _split_lines(data.decode("utf-8", errors="replace"))
    total = len(lines)
    if total == 0:
        return f"{rel}: empty file (0 lines)"
    if offset > total:
        raise ToolError(
            f"read_file: offset {offset} is past the end of '{rel}', which has "
            f"{total} lines; use an offset from 1 to {total}"
        )
    width = len(str(total))
    out: list[str] = []
    size = 0
    last = offset - 1
    budget = ws.max_output - 200  # room for the header and the paging note
    for n in range(offset, min(total, offset + limit - 1) + 1):
        line = lines[n - 1]
        if len(line) > READ_LINE_CUT:
            line = line[:READ_LINE_CUT] + f" [... line cut; {len(line)} characters]"
        row = f"{n:>{width}}\t{line}"
        if out and size + len(row) + 1 > budget:
            break
        out.append(row)
        size += len(row) + 1
        last = n
    header = f"{rel}: {total} lines; showing {offset}-{last}"
    text = header + "\n" + "\n".join(out)
    if last < total:
        text += f"\n[{total - last} more lines: read_file(path='{rel}', offset={last + 1})]"
    return text


def list_files(ws: Workspace, path: str, depth: int) -> str:
    real, rel = ws.resolve("list_files", path)
    if not os.path.exists(real):
        raise ToolError(f"list_files: no folder '{rel}'; use list_files(path='.') to see the root")
    if not os.path.isdir(real):
        raise ToolError(f"list_files: '{rel}' is a file; use read_file(path='{rel}')")
    ignored = _git_ignored_dirs(ws, rel)
    entries: list[str] = []
    cut = False

    def walk(folder: str, level: int) -> None:
        nonlocal cut
        try:
            items = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as e:
            entries.append(f"{os.path.relpath(folder, ws.root)}/ (unreadable: {e.strerror})")
            return
        for item in items:
            if cut:
                return
            if item.name == ".git":
                continue
            if len(entries) >= LIST_CAP:
                cut = True
                return
            item_rel = Path(os.path.relpath(item.path, ws.root)).as_posix()
            if item.is_symlink():
                entries.append(f"{item_rel} -> {os.readlink(item.path)}")
            elif item.is_dir():
                if item_rel in ignored:
                    entries.append(f"{item_rel}/ (ignored by git; not expanded)")
                else:
                    entries.append(f"{item_rel}/")
                    if level < depth:
                        walk(item.path, level + 1)
            else:
                entries.append(item_rel)

    walk(real, 1)
    where = "the repository root" if rel == "." else f"'{rel}'"
    if not entries:
        return f"{where} is empty"
    text = f"{len(entries)} entries under {where} (depth {depth}):\n" + "\n".join(entries)
    if cut:
        text += f"\n[listing cut at {LIST_CAP} entries; list a subfolder or use a smaller depth]"
    return ws.cap(text, "list a subfolder or use a smaller depth")


def _git_ignored_dirs(ws: Workspace, rel: str) -> set[str]:
    """Repository-relative folders git ignores (no git, or git failing: none)."""
    out = _git_lines(
        ws, ["ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z", "--", rel]
    )
    return {p.rstrip("/") for p in (out or []) if p.endswith("/")}


def _git_lines(ws: Workspace, args: list[str]) -> list[str] | None:
    if not os.path.exists(os.path.join(ws.root, ".git")):
        return None
    try:
        r = subprocess.run(
            ["git", *args], cwd=ws.root, capture_output=True, timeout=30, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0:
        return None
    return [p for p in r.stdout.decode("utf-8", errors="surrogateescape").split("\0") if p]


def write_file(ws: Workspace, path: str, content: str) -> str:
    real, rel = ws.writable("write_file", path)
    if rel == "." or os.path.isdir(real):
        raise ToolError(f"write_file: '{rel}' is a folder; give a file path")
    existed = os.path.exists(real)
    os.makedirs(os.path.dirname(real), exist_ok=True)
    with open(real, "w", encoding="utf-8", newline="") as f:
        f.write(content)
    verb = "replaced" if existed else "created"
    return f"{verb} {rel} ({len(_split_lines(content))} lines, {len(content.encode())} bytes)"


def edit_file(ws: Workspace, path: str, old: str, new: str, count: int) -> str:
    real, rel = ws.writable("edit_file", path)
    if not os.path.isfile(real):
        what = "is a folder" if os.path.isdir(real) else "does not exist"
        raise ToolError(f"edit_file: '{rel}' {what}; use write_file to create a file")
    if old == "":
        raise ToolError("edit_file: argument 'old' is empty; give the exact text to replace")
    try:
        with open(real, encoding="utf-8", newline="") as f:
            text = f.read()
    except UnicodeDecodeError:
        raise ToolError(f"edit_file: '{rel}' is not UTF-8 text; use write_file to replace it whole") from None
    found = text.count(old)
    if found == 0:
        raise ToolError(
            f"edit_file: 'old' occurs 0 times in '{rel}'; read_file it and copy "
            "the text exactly, whitespace and indentation included"
        )
    if found != count:
        raise ToolError(
            f"edit_file: 'old' occurs {found} times in '{rel}', not {count}; "
            f"include more surrounding text to make it unique, or pass "
            f"count={found} to replace every occurrence"
        )
    with open(real, "w", encoding="utf-8", newline="") as f:
        f.write(text.replace(old, new, count))
    return f"edited {rel}: replaced {count} occurrence{'s' if count != 1 else ''}"
