"""The file tools: `read_file`, `list_files`, `write_file`, `edit_file` (the contract is in
`tools.py`). Each takes the participant's `Scope`, which resolves paths safely and caps and
masks what comes back.

No file can hold a turn: only regular files are opened, without blocking (a FIFO would wait for
a writer), files are read in chunks and folders walked with `Scope.cut` in between, so
`stop` and the turn's deadline end a read of a huge file or a walk of a huge tree."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from autodev.errors import ToolError
from autodev.guard.secrets import is_secret_file
from autodev.harness.deadline import Watch
from autodev.host import spawn

if TYPE_CHECKING:
    from autodev.harness.scope import Scope

LIST_CAP = 500
READ_LINE_CUT = 2000
BINARY_SNIFF = 8192
CHUNK = 1 << 20  # bytes read between two looks at `stop` and the deadline
EDIT_MAX = 32 << 20  # edit_file holds the file in memory; bigger files are not edited in place
GIT_TIMEOUT = 30.0


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


def _open_regular(tool: str, real: str, rel: str, flags: int) -> int:
    """A descriptor of the regular file at `real`. O_NONBLOCK: opening a FIFO does not wait for
    its other end; it is then refused like a device or a socket."""
    refusal = f"{tool}: '{rel}' is not a regular file (a pipe, socket or device)"
    try:
        fd = os.open(real, flags | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    except OSError as e:
        if e.errno == errno.ENXIO:  # a FIFO opened for writing, with no reader
            raise ToolError(refusal) from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise ToolError(refusal)
    if flags & (os.O_WRONLY | os.O_RDWR) and st.st_nlink > 1:
        # A hard link: writing it writes every other name of the file too (one into .git, such
        # as .git/HEAD, would break the repository for every later git command).
        os.close(fd)
        raise ToolError(
            f"{tool}: '{rel}' has {st.st_nlink} hard links, and writing it would change the other names "
            "too; delete it first (a new file then has one name), or write another path"
        )
    return fd


def _scan(ws: Scope, fd: int, first: int, last: int, budget: int) -> tuple[list[tuple[str, int]], int]:
    """Lines `first`..`last` (1-based, as far as `budget` characters go) as (text, characters)
    and the file's line count. Read in chunks: a huge file costs time, never memory, and `stop`
    or the turn's deadline cuts it. Of a long line only its head is kept."""
    head_cap = READ_LINE_CUT * 4 + 4  # bytes enough for READ_LINE_CUT characters
    kept: list[tuple[str, int]] = []
    total, head, chars, open_line, room = 0, bytearray(), 0, False, budget
    while chunk := os.read(fd, CHUNK):
        ws.cut("read_file")
        at = 0
        while at <= len(chunk):
            nl = chunk.find(b"\n", at)
            piece = chunk[at : nl if nl >= 0 else len(chunk)]
            wanted = first <= total + 1 <= last and room > 0
            if wanted:
                if len(head) < head_cap:
                    head += piece[: head_cap - len(head)]
                chars += len(piece.decode("utf-8", errors="replace"))
            open_line = open_line or bool(piece)
            if nl < 0:
                break
            total, at = total + 1, nl + 1
            if wanted:
                kept.append((head.decode("utf-8", errors="replace"), chars))
                room -= min(chars, READ_LINE_CUT) + 1  # at least what its row will take
            head, chars, open_line = bytearray(), 0, False
    if open_line:  # a last line without a final newline
        total += 1
        if first <= total <= last and room > 0:
            kept.append((head.decode("utf-8", errors="replace"), chars))
    return kept, total


def read_file(ws: Scope, path: str, offset: int, limit: int) -> str:
    real, rel = ws.resolve("read_file", path)
    if not os.path.exists(real):
        raise ToolError(f"read_file: no file '{rel}'; use list_files or search to find it")
    if os.path.isdir(real):
        raise ToolError(f"read_file: '{rel}' is a folder; use list_files(path='{rel}')")
    budget = ws.max_output - 200  # room for the header and the paging note
    fd = _open_regular("read_file", real, rel, os.O_RDONLY)
    try:
        if _looks_binary(os.pread(fd, BINARY_SNIFF, 0)):
            return f"{rel}: binary file ({os.fstat(fd).st_size} bytes); not shown"
        lines, total = _scan(ws, fd, offset, offset + limit - 1, budget)
    finally:
        os.close(fd)
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
    for n, (line, chars) in enumerate(lines, offset):
        if line.endswith("\r") and chars <= READ_LINE_CUT:
            line, chars = line[:-1], chars - 1
        if chars > READ_LINE_CUT:
            line = line[:READ_LINE_CUT] + f" [... line cut; {chars} characters]"
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


def list_files(ws: Scope, path: str, depth: int) -> str:
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
            items: list[os.DirEntry[str]] = []
            with os.scandir(folder) as listing:
                for item in listing:
                    if len(items) % 1000 == 0:  # a folder of millions of entries takes a while
                        ws.cut("list_files")
                    items.append(item)
            items.sort(key=lambda e: e.name)
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
            if ws.secret_files and is_secret_file(item_rel, ws.secret_files):
                # named, so the model knows it exists, but a secret folder is not expanded
                entries.append(f"{item_rel}{'/' if item.is_dir() else ''} (secret file: contents kept out)")
            elif item.is_symlink():
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


def _git_ignored_dirs(ws: Scope, rel: str) -> set[str]:
    """Repository-relative folders git ignores (no git, or git failing: none)."""
    out = _git_lines(
        ws, ["ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z", "--", rel]
    )
    return {p.rstrip("/") for p in (out or []) if p.endswith("/")}


def _git_lines(ws: Scope, args: list[str]) -> list[str] | None:
    if not os.path.exists(os.path.join(ws.root, ".git")):
        return None
    from autodev.host import hostgit

    try:
        argv, env = hostgit.command(Path(ws.root), *args)
    except hostgit.GitRefused as e:
        raise ToolError(f"list_files: {e.message}") from None
    try:
        proc = spawn.popen(
            argv,
            "git",
            cwd=ws.root,
            env=env,
            stdin=spawn.DEVNULL,
            stdout=spawn.PIPE,
            stderr=spawn.DEVNULL,
        )
    except OSError:
        return None
    # A huge tree makes git slow: killed at the turn's deadline or on `stop`, like a command.
    watch = Watch(proc.kill, ws.time_for(GIT_TIMEOUT), ws.stopping_now)
    try:
        out, _ = proc.communicate()
    finally:
        why = watch.finish()
    if why:
        raise ToolError(f"list_files: {why}")
    if proc.returncode != 0:
        return None
    return [p for p in out.decode("utf-8", errors="surrogateescape").split("\0") if p]


def write_file(ws: Scope, path: str, content: str) -> str:
    real, rel = ws.writable("write_file", path)
    if rel == "." or os.path.isdir(real):
        raise ToolError(f"write_file: '{rel}' is a folder; give a file path")
    existed = os.path.exists(real)
    os.makedirs(os.path.dirname(real), exist_ok=True)
    fd = _open_regular("write_file", real, rel, os.O_WRONLY | os.O_CREAT)
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
        f.truncate(0)  # only now: a FIFO or a device is refused untouched
        f.write(content)
    verb = "replaced" if existed else "created"
    return f"{verb} {rel} ({len(_split_lines(content))} lines, {len(content.encode())} bytes)"


def edit_file(ws: Scope, path: str, old: str, new: str, count: int) -> str:
    real, rel = ws.writable("edit_file", path)
    if not os.path.isfile(real):
        what = "is a folder" if os.path.isdir(real) else "does not exist"
        raise ToolError(f"edit_file: '{rel}' {what}; use write_file to create a file")
    if old == "":
        raise ToolError("edit_file: argument 'old' is empty; give the exact text to replace")
    fd = _open_regular("edit_file", real, rel, os.O_RDWR)
    with os.fdopen(fd, "r+", encoding="utf-8", newline="") as f:
        if os.fstat(fd).st_size > EDIT_MAX:
            raise ToolError(
                f"edit_file: '{rel}' is larger than {EDIT_MAX >> 20} MiB, too big to edit in place; "
                "change it with a command (e.g. sed) through run_command"
            )
        try:
            text = f.read()
        except UnicodeDecodeError:
            raise ToolError(
                f"edit_file: '{rel}' is not UTF-8 text; use write_file to replace it whole"
            ) from None
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
        f.seek(0)
        f.truncate()
        f.write(text.replace(old, new, count))
    return f"edited {rel}: replaced {count} occurrence{'s' if count != 1 else ''}"
