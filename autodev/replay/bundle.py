"""`autodev runs export RUN` and the bundles `replay` reads: one tar.gz with a run's logs, its
team files and its repository's base and commits (a git bundle), secrets redacted.

A bundle is untrusted input (it may come from anyone's bug report). Reading it: only regular
files and folders under `autodev-bundle/` are taken (absolute names, `..`, links, devices and
fifos are refused), within bounds on members, sizes, line length and nesting (no parser meets a
depth that exhausts Python's stack); the git objects come in through `git clone` of the bundle
file with hooks off; and the run's configuration is cut to an allow-list before it runs
(`safe.safe_config`): the sandbox required, no network, default gates, no hooks, notifications,
telemetry or MCP servers, no participant tools, endpoints, keys or agent CLI arguments (its CLI
turns are played by replay's stand-in, from the raw streams the bundle carries).
"""

from __future__ import annotations

import io
import json
import re
import tarfile
import tomllib
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, NoReturn, TypeVar

from autodev import records
from autodev.config.project import HISTORY, team_versions
from autodev.errors import UsageError
from autodev.guard import secrets
from autodev.records.events import Event
from autodev.replay.recording import BadLine, Recording, read
from autodev.store.journal import JsonObject, is_object
from autodev.store.paths import RunPaths
from autodev.store.thread import now_ts
from autodev.timeline import git
from autodev.timeline.safe import BundleRefused, is_array
from autodev.timeline.safe import safe_config as safe_config  # bundles are made safe there (replay shares it)

if TYPE_CHECKING:
    from autodev.guard.redact import Redactor

R = TypeVar("R")

ROOT = "autodev-bundle"
LOGS = ("thread.jsonl", "events.jsonl", "harness.jsonl", "rewinds.jsonl", "state.json")
# A bundle's bounds (each refusal names the bundle, the member and the limit). The git bundle is
# the only large member; the logs of a long run are tens of megabytes, their lines (a turn's
# prompt, a tool's output) well below a megabyte, their nesting a dozen levels.
MAX_MEMBER = 256 * 1024 * 1024
MAX_TOTAL = 1024 * 1024 * 1024
MAX_MEMBERS = 20_000
MAX_LINE = 16 * 1024 * 1024
MAX_DEPTH = 100
FORMAT = 1


def _redactor(paths: RunPaths, secret_files: list[str]) -> Redactor:
    from autodev.config import load_team
    from autodev.guard.redact import Redactor

    names: list[str] = []
    try:
        names = load_team(paths.team_file).key_names()
    except Exception:  # noqa: BLE001 - a broken team file still exports, with the usual names
        pass
    redact = Redactor.from_env(names)
    # and what the repository's secret files hold, should a record carry it (an agent CLI's raw
    # stream, read outside the sandbox)
    try:
        redact.learn(secrets.file_values(secrets.find(paths.repo, secret_files)))
    except secrets.TooManyFiles as e:
        raise UsageError(
            f"runs export: {e}", "export from a repository without its generated folders"
        ) from None
    return redact


def _secrets_in_history(repo: Path, refs: list[str], patterns: list[str]) -> list[str]:
    """Paths of files matching `patterns` in any commit reachable from `refs`: a git bundle
    carries every one of them, and rewriting history would change the commits replay needs."""
    listed = git.git(repo, "rev-list", "--objects", *refs)
    paths = {line.split(" ", 1)[1] for line in listed.splitlines() if " " in line}
    return sorted(p for p in paths if secrets.is_secret_file(p, patterns))


def export(paths: RunPaths, out: Path) -> Path:
    """Write the run of `paths` to `out` (a .tar.gz)."""
    from autodev.replay.replay import base_of
    from autodev.store.rebuild import read_state

    if not paths.thread.exists():
        raise UsageError(f"there is no run in {paths.run_dir}", "run `autodev start` first")
    from autodev.config import load_config

    patterns = load_config(paths.config_file).secret_files
    redact = _redactor(paths, patterns)
    try:
        harness = read(paths.harness_log, records.harness)
    except BadLine as e:
        raise UsageError(f"runs export: {paths.harness_log}: {e}", "restore the file from a backup") from None
    state = read_state(paths)
    base = base_of(harness, state)
    if not base:
        raise UsageError("the run recorded no base commit", "export a run that made at least one turn")
    head = git.head(paths.repo)
    carried = _secrets_in_history(paths.repo, ["HEAD", "--branches", base], patterns)
    if carried:
        raise UsageError(
            f"runs export: the repository's history holds {len(carried)} secret file(s) "
            f"({', '.join(carried[:5])}{', ...' if len(carried) > 5 else ''}), which match secretFiles; "
            "a bundle would carry them to whoever reads it",
            "remove them from the history first (e.g. `git filter-repo --invert-paths --path FILE`), "
            "or take their patterns out of secretFiles in .autodev/config.toml if they hold no keys",
        )
    manifest = {
        "format": FORMAT,
        "run_id": state.run_id,
        "base": base,
        "head": head,
        "created": now_ts(),
    }
    tmp = out.with_name(f".{out.name}.tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        _add(tar, "manifest.json", json.dumps(manifest, indent=1).encode())
        for name in LOGS:
            f = paths.run_dir / name
            if f.exists():
                _add(tar, f"run/{name}", _redacted(f.read_text(errors="replace"), redact))
        # the raw streams of the agent CLI runs: replay's stand-in CLI plays them back
        agents = paths.run_dir / "agents"
        for f in sorted(agents.glob("t*-*.*")) if agents.is_dir() else []:
            if f.suffix in (".jsonl", ".stderr") and f.is_file() and not f.is_symlink():
                _add(tar, f"run/agents/{f.name}", _redacted(f.read_text(errors="replace"), redact))
        _add_teams(tar, paths, redact, patterns)
        with _git_bundle(paths.repo, base) as data:
            _add(tar, "repo.bundle", data)
    tmp.replace(out)
    return out


def _add_teams(tar: tarfile.TarFile, paths: RunPaths, redact: Redactor, patterns: list[str]) -> None:
    """The team as it is, and every team the run had (replay runs each turn with its own)."""
    config = paths.config_dir if (paths.config_dir / "team.toml").exists() else paths.run_dir / "team"
    folders = [(config, "config")]
    folders += [(d, f"run/{HISTORY}/{n}") for n, d in sorted(team_versions(paths.run_dir).items())]
    for folder, member in folders:
        for f in sorted(folder.rglob("*")):
            if secrets.is_secret_file(f.relative_to(folder).as_posix(), patterns):
                continue  # a key file kept next to the team files stays out too
            if f.is_file() and not f.is_symlink():
                name = f"{member}/{f.relative_to(folder).as_posix()}"
                _add(tar, name, _redacted(f.read_text(errors="replace"), redact))


def _redacted(text: str, redact: Redactor) -> bytes:
    return redact.text(text).encode()


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(f"{ROOT}/{name}")
    info.size, info.mode, info.mtime = len(data), 0o600, 0
    tar.addfile(info, io.BytesIO(data))


class _git_bundle:
    """The repository's base and everything reachable from HEAD and the run's refs, as bytes."""

    def __init__(self, repo: Path, base: str):
        self.repo, self.base = repo, base

    def __enter__(self) -> bytes:
        import tempfile

        self.dir = tempfile.TemporaryDirectory(prefix="autodev-export-")
        f = Path(self.dir.name) / "repo.bundle"
        git.git(self.repo, "tag", "-f", "autodev-base", self.base)  # keeps the base reachable
        try:
            git.git(
                self.repo, "bundle", "create", "-q", str(f), "HEAD", "refs/tags/autodev-base", "--branches"
            )
        finally:
            git.git(self.repo, "tag", "-d", "autodev-base", check=False)
        return f.read_bytes()

    def __exit__(self, *exc: object) -> None:
        self.dir.cleanup()


# -- reading one -------------------------------------------------------------------------------


def unpack(bundle: Path, into: Path) -> Path:
    """The bundle's files under `into` (its `autodev-bundle/` folder returned), checked member by
    member; nothing outside `into` is ever written."""
    try:
        tar = tarfile.open(bundle, "r:gz")
    except (OSError, tarfile.TarError) as e:
        raise BundleRefused(
            f"{bundle} is not a readable .tar.gz ({e})", "give a file `autodev runs export` wrote"
        ) from None
    total = count = 0
    with tar:
        # one member at a time: a bundle of a million members is refused at the first too many
        for m in _members(bundle, tar):
            count += 1
            if count > MAX_MEMBERS:
                _too_much(bundle, m.name, f"is member {count}, over the limit of {MAX_MEMBERS} members")
            name = PurePosixPath(m.name)
            if name.is_absolute() or ".." in name.parts or not name.parts or name.parts[0] != ROOT:
                raise BundleRefused(
                    f"{bundle}: member {m.name!r} escapes the bundle's folder", "do not replay it"
                )
            if not (m.isfile() or m.isdir()):
                raise BundleRefused(
                    f"{bundle}: member {m.name!r} is a link or a special file",
                    "do not replay it; bundles hold files only",
                )
            if m.size > MAX_MEMBER:
                _too_much(bundle, m.name, f"is {m.size} bytes, over the limit of {MAX_MEMBER} per member")
            total += m.size
            if total > MAX_TOTAL:
                _too_much(bundle, m.name, f"takes the bundle over the limit of {MAX_TOTAL} bytes unpacked")
            dest = into.joinpath(*name.parts)
            data = None
            if m.isfile():
                src = tar.extractfile(m)
                assert src is not None
                data = src.read()
                _check_text(bundle, m.name, data)
            try:
                if data is None:
                    dest.mkdir(parents=True, exist_ok=True)
                else:
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    with open(dest, "wb") as w:
                        w.write(data)
            except (FileExistsError, NotADirectoryError, IsADirectoryError):
                raise BundleRefused(
                    f"{bundle}: member {m.name!r} clashes with an earlier member (a file and a folder of one name)",
                    "do not replay it",
                ) from None
    root = into / ROOT
    for need in ("manifest.json", "run/thread.jsonl", "repo.bundle", "config/team.toml"):
        if not (root / need).is_file():
            raise BundleRefused(f"{bundle} has no {need}", "give a file `autodev runs export` wrote")
    return root


def _members(bundle: Path, tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    try:
        yield from tar
    except (OSError, EOFError, tarfile.TarError, zlib.error) as e:
        raise BundleRefused(
            f"{bundle} is damaged ({e})", "give a whole file `autodev runs export` wrote"
        ) from None


def _too_much(bundle: Path, member: str, what: str) -> NoReturn:
    raise BundleRefused(f"{bundle}: member {member!r} {what}", "do not replay it")


def _check_text(bundle: Path, member: str, data: bytes) -> None:
    """Every member but the git bundle is text that autodev reads line by line or parses: its
    lines and its nesting are bounded, so no parser meets a line it cannot hold or a depth that
    exhausts Python's stack (the JSON and TOML parsers recurse)."""
    if member.endswith("/repo.bundle"):
        return
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        if end - start > MAX_LINE:
            n = data.count(b"\n", 0, start) + 1
            _too_much(bundle, member, f"has a line ({n}) longer than the limit of {MAX_LINE} bytes")
        start = end + 1
    if member.endswith((".json", ".jsonl", ".toml")):
        deep = depth_of(data, kind=member.rsplit(".", 1)[1])
        if deep is None or deep > MAX_DEPTH:
            how = "deeper than Python's parser can go" if deep is None else f"{deep} levels deep"
            _too_much(bundle, member, f"is nested {how}, over the nesting limit of {MAX_DEPTH}")


def depth_of(data: bytes, *, kind: str) -> int | None:
    """The deepest nesting of arrays and tables in `data` (a "json" document, "jsonl" lines or
    "toml"), as the parser that later reads it sees it; None when the parser gives up on the
    depth itself. What does not parse counts 0 here: its reader refuses it, without recursing."""
    try:
        if kind == "toml":
            docs = [tomllib.loads(data.decode())]
        elif kind == "json":
            docs = [json.loads(data)]
        else:
            docs: list[object] = []
            for line in data.splitlines():
                try:
                    docs.append(json.loads(line))
                except ValueError:
                    continue
    except RecursionError:
        return None
    except ValueError:  # UnicodeDecodeError and TOMLDecodeError included
        return 0
    deepest = 0
    todo: list[tuple[object, int]] = [(d, 1) for d in docs]
    while todo:
        obj, level = todo.pop()
        if is_object(obj):  # a TOML table's keys are strings too
            deepest = max(deepest, level)
            todo.extend((v, level + 1) for v in obj.values())
        elif is_array(obj):
            deepest = max(deepest, level)
            todo.extend((v, level + 1) for v in obj)
    return deepest


def recording(bundle: Path, into: Path) -> Recording:
    """The `replay.Recording` a bundle holds (untrusted)."""
    root = unpack(bundle, into)
    try:
        manifest = json.loads((root / "manifest.json").read_text())
        base = str(manifest["base"])
    except (ValueError, KeyError, TypeError) as e:
        raise BundleRefused(
            f"{bundle}: its manifest is unreadable ({e})", "give a file `autodev runs export` wrote"
        ) from None
    if not re.fullmatch(r"[0-9a-f]{40}", base):
        raise BundleRefused(
            f"{bundle}: its base {base!r} is not a commit id", "give a file `autodev runs export` wrote"
        )

    run = root / "run"
    return Recording(
        _log(bundle, run, "thread.jsonl", records.post),
        _log(bundle, run, "events.jsonl", _event),
        _log(bundle, run, "harness.jsonl", records.harness),
        root / "config",
        base,
        root / "repo.bundle",
        True,
        run_dir=run,
        forked_at=_forked_at(run / "state.json"),
    )


def _event(rec: JsonObject) -> Event:
    return records.event(rec)


def _log(bundle: Path, run: Path, name: str, parse: Callable[[JsonObject], R]) -> list[R]:
    """The log's lines, each read into its model: replay reads their fields as the daemon wrote
    them (a turn is a number, a message a table), so a crafted line is refused here, naming it,
    not met as a KeyError in the middle of a replay."""
    from autodev.errors import CorruptLogError
    from autodev.guard.display import line

    try:
        return read(run / name, parse)
    except BadLine as e:
        raise BundleRefused(
            f"{bundle}: run/{name} line {e.n} is not a record autodev wrote ({line(e.reason)})",
            "give a file `autodev runs export` wrote",
        ) from None
    except CorruptLogError as e:
        raise BundleRefused(
            f"{bundle}: run/{name} is not JSON lines ({e.message.rsplit(': ', 1)[-1]})",
            "give a file `autodev runs export` wrote",
        ) from None


def _forked_at(state: Path) -> int | None:
    """A fork's post (its state's `forked_from.seq`), else None; an unreadable state is no
    fork (the state is only read for this)."""
    try:
        seq = json.loads(state.read_text()).get("forked_from", {}).get("seq")
    except (OSError, ValueError, AttributeError):
        return None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) and seq > 0 else None
