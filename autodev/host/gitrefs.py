"""HEAD's commit read from the ref files git keeps, without starting git (issue 33: every post
records the commit `autodev rewind` goes back to, and a git process for it was a seventh of the
daemon's own time per turn).

Only the plain cases are read here: `HEAD` holding a commit id, or naming a branch whose loose
ref file or `packed-refs` line holds one (no such line: the branch has no commit yet). Anything
else is git's to answer: a reftable repository, a ref that points at another ref, a name outside
`refs/heads/`, an odd file. The files lie in the repository, where a participant writes, so
each is opened without following a symbolic link and without blocking (a FIFO), must be a
regular file of a sane size, and its id must be hex of a hash's length; otherwise git answers.
The repository is checked as every git command checks it first (`hostgit.current`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from autodev.host import hostgit

_ASK = object()  # the files do not answer: ask git
_MAX = 1 << 20  # a packed-refs larger than this is git's to read
_HEX = frozenset("0123456789abcdef")


def head(repo: Path) -> str | None:
    """HEAD's commit id, or None in a repository with no commit yet (as `git rev-parse -q
    --verify HEAD` answers; it is asked when the files do not say)."""
    ident = hostgit.current(repo)
    found = _from_files(ident.git_dir, ident.common_dir)
    if found is not _ASK:
        assert found is None or isinstance(found, str)
        return found
    r = hostgit.run(repo, "rev-parse", "-q", "--verify", "HEAD", check=False)
    return r.stdout.strip() or None


def _from_files(git_dir: Path, common: Path) -> object:
    if os.path.lexists(common / "reftable"):
        return _ASK
    text = _read(git_dir / "HEAD")
    if text is None:
        return _ASK
    line = text.strip()
    if _is_id(line):
        return line  # detached
    if not line.startswith("ref: "):
        return _ASK
    name = line[len("ref: ") :].strip()
    parts = name.split("/")
    if parts[:2] != ["refs", "heads"] or len(parts) < 3 or any(p in ("", ".", "..") for p in parts):
        return _ASK
    loose = _read(common.joinpath(*parts))
    if loose is not None:
        value = loose.strip()
        return value if _is_id(value) else _ASK
    if os.path.lexists(common.joinpath(*parts)):
        return _ASK  # there, but not a plain file
    return _packed(common / "packed-refs", name)


def _packed(path: Path, name: str) -> object:
    if not os.path.lexists(path):
        return None  # no loose ref, no packed one: the branch has no commit yet
    text = _read(path)
    if text is None:
        return _ASK
    for line in text.splitlines():
        if not line or line[0] in "#^":
            continue
        value, _, ref = line.partition(" ")
        if ref == name:
            return value if _is_id(value) else _ASK
    return None


def _read(path: Path) -> str | None:
    """The file's text, or None when it is missing or not a small regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX:
            return None
        raw = os.read(fd, _MAX + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        return raw.decode("ascii")
    except UnicodeDecodeError:
        return None


def _is_id(value: str) -> bool:
    return len(value) in (40, 64) and set(value) <= _HEX
