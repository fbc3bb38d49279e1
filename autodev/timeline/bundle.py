"""`autodev runs export RUN` and the bundles `replay` reads: one tar.gz with a run's logs, its
team files and its repository's base and commits (a git bundle), secrets redacted.

A bundle is untrusted input (it may come from anyone's bug report). Reading it: only regular
files and folders under `autodev-bundle/` are taken (absolute names, `..`, links, devices and
fifos are refused, and so is a bundle bigger than its caps); the git objects come in through
`git clone` of the bundle file with hooks off; and the run's configuration is cut down before it
runs (`safe_config`): no hooks, no notifications, no MCP servers, no agent CLI arguments or keys (its
CLI turns are played by replay's stand-in, from the raw streams the bundle carries), the
sandbox required.
"""

from __future__ import annotations

import io
import json
import re
import tarfile
from pathlib import Path, PurePosixPath

from autodev.errors import UsageError
from autodev.guard import secrets
from autodev.store.journal import iter_records
from autodev.store.paths import RunPaths
from autodev.store.thread import now_ts
from autodev.timeline import git
from autodev.timeline.safe import BundleRefused
from autodev.timeline.safe import safe_config as safe_config  # bundles are made safe there (replay shares it)

ROOT = "autodev-bundle"
LOGS = ("thread.jsonl", "events.jsonl", "harness.jsonl", "rewinds.jsonl", "state.json")
MAX_MEMBER = 256 * 1024 * 1024
MAX_TOTAL = 1024 * 1024 * 1024
FORMAT = 1


def _redactor(paths: RunPaths, secret_files: list[str]):
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
    from autodev.store.rebuild import read_state
    from autodev.timeline.replay import base_of

    if not paths.thread.exists():
        raise UsageError(f"there is no run in {paths.run_dir}", "run `autodev start` first")
    from autodev.config import load_config

    patterns = load_config(paths.config_file).secret_files
    redact = _redactor(paths, patterns)
    harness = list(iter_records(paths.harness_log)) if paths.harness_log.exists() else []
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
        config = paths.config_dir if (paths.config_dir / "team.toml").exists() else paths.run_dir / "team"
        for f in sorted(config.rglob("*")):
            if secrets.is_secret_file(f.relative_to(config).as_posix(), patterns):
                continue  # a key file kept next to the team files stays out too
            if f.is_file() and not f.is_symlink():
                _add(
                    tar,
                    f"config/{f.relative_to(config).as_posix()}",
                    _redacted(f.read_text(errors="replace"), redact),
                )
        with _git_bundle(paths.repo, base) as data:
            _add(tar, "repo.bundle", data)
    tmp.replace(out)
    return out


def _redacted(text: str, redact) -> bytes:
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

    def __exit__(self, *exc) -> None:
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
    total = 0
    with tar:
        for m in tar.getmembers():
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
            total += m.size
            if m.size > MAX_MEMBER or total > MAX_TOTAL:
                raise BundleRefused(f"{bundle}: member {m.name!r} is too large", "do not replay it")
            dest = into.joinpath(*name.parts)
            if m.isdir():
                dest.mkdir(parents=True, exist_ok=True)
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            src = tar.extractfile(m)
            assert src is not None
            with open(dest, "wb") as w:
                w.write(src.read())
    root = into / ROOT
    for need in ("manifest.json", "run/thread.jsonl", "repo.bundle", "config/team.toml"):
        if not (root / need).is_file():
            raise BundleRefused(f"{bundle} has no {need}", "give a file `autodev runs export` wrote")
    return root


def recording(bundle: Path, into: Path):
    """The `replay.Recording` a bundle holds (untrusted)."""
    from autodev.timeline.replay import Recording

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

    def logs(name: str) -> list[dict]:
        f = root / "run" / name
        return list(iter_records(f)) if f.exists() else []

    return Recording(
        logs("thread.jsonl"),
        logs("events.jsonl"),
        logs("harness.jsonl"),
        root / "config",
        base,
        root / "repo.bundle",
        True,
        run_dir=root / "run",
    )
