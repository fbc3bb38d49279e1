"""The one list of files that hold keys (config `secretFiles`) and the one matcher for it.

Every place that must keep such a file out asks `is_secret_file` (or walks with `find`, which
asks it for each entry): the sandbox's mounts, read_file, write/edit, list_files, search, the
masking of command output (`file_values`), rewind snapshots, `runs export` bundles and, through
the masked records, telemetry. A pattern matches a repository path when it matches the whole
path or any one folder or file name on it (fnmatch, case-sensitive), so `.env` also covers
`node_modules/pkg/.env` and a matching folder covers everything below it.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Callable, Iterable

from autodev.errors import ToolError

# The default of config `secretFiles`.
SECRET_FILES: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.env",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    ".pgpass",
    ".pypirc",
    ".npmrc",
    ".git-credentials",
    "credentials.json",
    "*.tfvars",
)

# Entries `find` looks at before it gives up. Walking is fast (about 0.3 s per 100,000 entries
# once cached), so this is far beyond a repository with its dependency folders; beyond it the
# walk fails closed (TooManyFiles) rather than leave files unchecked.
MAX_WALKED = 1_000_000
# What `file_values` reads of one secret file (keys are short; a bigger file is read this far).
MAX_VALUE_BYTES = 64 * 1024
MIN_VALUE_LEN = 8  # as redact.MIN_SECRET_LEN: shorter values would mask ordinary words


class TooManyFiles(ToolError):
    """The repository has more entries than `find` may look at: no command runs, since some
    secret file might be left readable."""


@functools.lru_cache(maxsize=64)
def _matcher(patterns: tuple[str, ...]) -> Callable[[str], re.Match[str] | None]:
    if not patterns:
        return lambda _s: None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)).match


def is_secret_file(path: str, patterns: Iterable[str]) -> bool:
    """Whether the repository path `path` (or any folder on it) matches a `secretFiles` pattern."""
    match = _matcher(tuple(patterns))
    parts = [p for p in path.replace("\\", "/").split("/") if p and p != "."]
    return bool(parts) and (match("/".join(parts)) is not None or any(match(p) for p in parts))


def find(root: str | os.PathLike[str], patterns: Iterable[str], limit: int | None = None) -> list[str]:
    """Absolute paths of the files and folders under `root` that match `patterns`, looking in
    every folder (dependency and cache folders too) except the repository's own `.git` (git's
    store: branch names there are not the user's files, and the file tools refuse it anyway).
    A matching folder is returned whole, not entered. Symbolic links are not returned (what they
    point to inside the repository is found as itself; outside it is not in the sandbox).
    More than `limit` (default MAX_WALKED) entries: TooManyFiles."""
    limit = MAX_WALKED if limit is None else limit
    patterns = tuple(patterns)
    if not patterns:
        return []
    match = _matcher(patterns)
    top = os.path.realpath(root)
    found: list[str] = []
    seen = 0
    for folder, dirs, files in os.walk(top):
        rel = os.path.relpath(folder, top)
        if rel == ".":
            dirs[:] = [d for d in dirs if d != ".git"]
        prefix = "" if rel == "." else rel + "/"
        subdirs, keep = set(dirs), set[str]()
        for name in [*dirs, *files]:
            seen += 1
            # is_secret_file's rule, applied step by step: no folder above matched (it would not
            # have been entered), so the name itself and the whole path are what is left to try
            if match(name) is not None or match(prefix + name) is not None:
                full = os.path.join(folder, name)
                if not os.path.islink(full):
                    found.append(full)
            elif name in subdirs:
                keep.add(name)
        dirs[:] = [d for d in dirs if d in keep]
        if seen > limit:
            raise TooManyFiles(
                f"the repository has more than {limit:,} files and folders, too many to check "
                "each against secretFiles, so no command runs (a secret file might stay readable); "
                "remove generated or dependency folders from it, or ask the user to run the command"
            )
    return found


# Where a line of a key file splits into fields (dotenv, .netrc, .pgpass, YAML, INI, JSON, the
# user:password@host of a URL).
_FIELDS = re.compile(r"[\s=:,;'\"{}\[\]@/]+")


def file_values(paths: Iterable[str]) -> set[str]:
    """The values the secret files at `paths` hold, for the masker: each line, the value after
    `=` or `:`, and each field of the line; a folder's files too. So what such a file holds,
    read where no sandbox hides it (sandbox = "off", an agent CLI), is masked in every tool
    result, log, bundle and span like a key from the environment. A plain word under 16
    letters (`NODE_ENV=production`) or a variable's name is not a key and would mask ordinary
    text, so it is left alone, unless it is the value of a secret-named variable."""
    from autodev.guard.redact import is_secret_name

    out: set[str] = set()
    for path in paths:
        files = [path]
        if os.path.isdir(path) and not os.path.islink(path):
            files = [os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs][:200]
        for f in files:
            try:
                with open(f, "rb") as fh:
                    raw = fh.read(MAX_VALUE_BYTES)
            except OSError:
                continue  # gone or unreadable: nothing of it can reach an output either
            for line in raw.decode("utf-8", errors="replace").splitlines():
                line = line.strip()
                candidates = {line, *_FIELDS.split(line)}
                cut = min((i for i in (line.find("="), line.find(":")) if i > 0), default=-1)
                if cut > 0:
                    name, value = (
                        line[:cut].strip().removeprefix("export ").strip(),
                        _unquoted(line[cut + 1 :]),
                    )
                    candidates.add(value)
                    if is_secret_name(name) and len(value) >= MIN_VALUE_LEN:
                        out.add(value)
                for c in map(_unquoted, candidates):
                    if len(c) >= MIN_VALUE_LEN and not _PLAIN.fullmatch(c) and not _NAME.fullmatch(c):
                        out.add(c)
    return out


_PLAIN = re.compile(r"[A-Za-z]{1,15}")  # a word, not a key
_NAME = re.compile(r"[A-Z][A-Z0-9_]*|[a-z][a-z0-9]*(?:[_.][a-z0-9]+)+")  # NODE_ENV, db.host: names


def _unquoted(text: str) -> str:
    return text.strip().strip("'\"").strip()
