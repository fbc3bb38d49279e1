"""`autodev doctor`: will `start` work here? One line per check, with the fix; starts nothing.

Offline by default and free of litellm: provider keys are checked against a small table of the
variables litellm asks for (a test keeps the table equal to litellm's answer). `--online` asks
litellm itself and contacts each participant's `api_base`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from autodev.errors import AutodevError
from autodev.host import spawn
from autodev.setup.teamchecks import (
    FAIL,
    MCP_START_SEC,
    OK,
    PROVIDER_KEYS,
    WARN,
    Check,
    agent_checks,
    browser_checks,
    gemini_settings_problem,
    mcp_checks,
    provider_checks,
    telemetry_checks,
)
from autodev.store.paths import RunPaths, autodev_home, find_repo

if TYPE_CHECKING:
    from autodev.config import Team

__all__ = ["FAIL", "MCP_START_SEC", "OK", "PROVIDER_KEYS", "WARN", "Check", "gemini_settings_problem"]

MIN_FREE_MB = 200


def run_checks(
    start: Path | None = None, online: bool = False, environ: Mapping[str, str] | None = None
) -> list[Check]:
    env = os.environ if environ is None else environ
    checks: list[Check] = []
    from autodev.host import hostgit

    try:
        git = hostgit.git_binary()
    except AutodevError as e:
        checks.append(Check(FAIL, "git", e.message, e.fix))
        return checks
    version = spawn.run(
        [git, "--version"], "git", capture_output=True, text=True, env=hostgit.git_env(), stdin=spawn.DEVNULL
    ).stdout.strip()
    checks.append(Check(OK, "git", version))
    try:
        repo = find_repo(start)
    except AutodevError as e:
        checks.append(Check(FAIL, "repository", e.message, e.fix))
        checks.append(disk_check(autodev_home()))
        checks.append(home_check(autodev_home()))
        return checks
    checks.append(Check(OK, "repository", str(repo)))
    checks.append(_git_folder(repo))
    if (shadow := _shadowing_package(repo)) is not None:
        checks.append(shadow)
    paths = RunPaths(repo)
    if (tracked := _tracked_secret_files(paths)) is not None:
        checks.append(tracked)
    checks.append(_identity(paths, env))
    team = _team(paths, checks)
    checks.append(_sandbox(paths))
    checks.append(_tests(paths))
    if team is not None:
        checks.extend(provider_checks(team, env, online))
        checks.extend(agent_checks(team, env, paths))
        checks.extend(mcp_checks(paths, team))
        checks.extend(browser_checks(team))
    checks.extend(telemetry_checks(paths))
    checks.append(_daemon(paths))
    checks.append(disk_check(paths.run_dir))
    checks.append(home_check(paths.run_dir))
    return checks


def _git_folder(repo: Path) -> Check:
    """Whether autodev will run git here: its .git and configuration as hostgit requires."""
    from autodev.host import hostgit

    try:
        ident = hostgit.identify(repo)
    except AutodevError as e:
        return Check(FAIL, "git folder", e.message, e.fix)
    blanked = f"; filter drivers not run by autodev: {', '.join(ident.filters)}" if ident.filters else ""
    return Check(OK, "git folder", f"{ident.git_dir} (no includes or config inside the repository){blanked}")


def _shadowing_package(repo: Path) -> Check | None:
    """A repository with its own top-level `autodev` package or module: `python -m autodev` typed
    in it runs that code instead of autodev (Python imports the package before any of autodev's
    code runs). The `autodev` command never looks in the working directory."""
    for name in ("autodev/__init__.py", "autodev.py"):
        if (repo / name).is_file():
            return Check(
                WARN,
                "python -m autodev",
                f"{repo / name} would be what `python -m autodev` runs in this repository (the "
                "working directory comes first on sys.path), not autodev",
                "use the `autodev` command here, never `python -m autodev`",
            )
    return None


def _tracked_secret_files(paths: RunPaths) -> Check | None:
    """Secret files committed at HEAD: git's objects hold them, so a participant's command reads
    them with `git show HEAD:.env` although the file itself is empty in the sandbox (only what
    the file on disk still holds is masked in the output). docs/DECISIONS.md: out of scope."""
    from autodev.config import RunConfig, load_config
    from autodev.guard.secrets import is_secret_file
    from autodev.host import hostgit

    try:
        patterns = load_config(paths.config_file).secret_files
    except AutodevError:
        patterns = RunConfig().secret_files  # the team check reports the broken config
    try:
        listed = hostgit.run(paths.repo, "ls-tree", "-r", "-z", "--name-only", "HEAD", check=False)
    except AutodevError:
        return None  # the git folder check above says why git is refused here
    found = [p for p in listed.stdout.split("\0") if p and is_secret_file(p, patterns)]
    if listed.returncode != 0 or not found:
        return None  # no commit yet, or git refused (the git folder check says why)
    return Check(
        WARN,
        "secret files in git",
        f"HEAD holds {len(found)} file(s) matching secretFiles ({', '.join(found[:5])}"
        f"{', ...' if len(found) > 5 else ''}): participants can read them from git's objects "
        "(`git show HEAD:<file>`), though the files themselves are empty in the sandbox",
        "take them out of the history (`git rm --cached FILE`, then `git filter-repo --invert-paths "
        "--path FILE`) and rotate the keys they held; or remove their patterns from secretFiles if "
        "they hold no keys",
    )


IDENTITY_FIX = (
    'git config --global user.name "Your Name"; git config --global user.email "you@example.com" '
    "(or the same without --global in this repository; autodev hands the identity git finds here, "
    "from ~/.gitconfig, $XDG_CONFIG_HOME/git/config, includeIf files or GIT_AUTHOR_*/GIT_COMMITTER_*, "
    "to the sandbox, which hides $HOME)"
)


def _identity(paths: RunPaths, env: Mapping[str, str]) -> Check:
    """The identity a participant's `git commit` gets: git asked inside the room its commands run
    in (the sandbox hides $HOME), with the identity autodev hands in, exactly as in a run."""
    from autodev.config import RunConfig, load_config
    from autodev.guard import sandbox
    from autodev.guard.redact import scrubbed_env
    from autodev.host import hostgit

    try:
        cfg = load_config(paths.config_file)
        box = sandbox.resolve(cfg.sandbox)
    except AutodevError:
        cfg, box = RunConfig(), sandbox.Sandbox("off", None)  # reported by the team/sandbox checks
    room = box.room(
        paths.repo, hide=sandbox.hidden(paths.run_dir), expose=[*cfg.sandbox_read, *cfg.sandbox_expose]
    )
    if box.active:
        room = replace(room, identity=tuple(sandbox.git_identity(paths.repo, env).items()))
    where = "in the sandbox" if box.active else "here"
    idents: list[str] = []
    for role in ("AUTHOR", "COMMITTER"):
        ask = ["-c", "user.useConfigOnly=true", "var", f"GIT_{role}_IDENT"]
        run_env = room.env(scrubbed_env((), env))
        try:
            if box.active:
                argv = room.wrap(["git", *ask])
            else:  # on the host: through hostgit like every git command autodev runs there
                argv, run_env = hostgit.command(paths.repo, *ask, base_env=run_env)
            r = spawn.run(
                argv,
                "sandboxed" if box.active else "git",
                cwd=paths.repo,
                env=run_env,
                capture_output=True,
                text=True,
                timeout=30,
                stdin=spawn.DEVNULL,
            )
        except (OSError, spawn.TimeoutExpired, AutodevError) as e:
            return Check(FAIL, "git identity", f"could not ask git {where}: {e}", IDENTITY_FIX)
        if r.returncode != 0:
            why = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
            return Check(FAIL, "git identity", f"commits {where} would fail: {why}", IDENTITY_FIX)
        idents.append(r.stdout.strip().rsplit(" ", 2)[0])
    author, committer = idents
    detail = author if author == committer else f"author {author}, committer {committer}"
    return Check(OK, "git identity", f"{detail} ({where})")


def _team(paths: RunPaths, checks: list[Check]) -> Team | None:
    from autodev.config import load_config, load_team

    if not paths.team_file.exists():
        checks.append(
            Check(
                FAIL,
                "team",
                f"{paths.team_file} not found",
                "run `autodev init` (or `autodev init --team pair`)",
            )
        )
        return None
    try:
        load_config(paths.config_file)
    except AutodevError as e:
        checks.append(Check(FAIL, "config", e.message, e.fix))
    try:
        team = load_team(paths.team_file)
        if team.uses_scripted():
            from autodev.scripted import load_script

            load_script(team.script_path(paths.team_file))
    except AutodevError as e:
        checks.append(Check(FAIL, "team", e.message, e.fix))
        return None
    names = ", ".join(team.names())
    n = len(team.participants)
    checks.append(Check(OK, "team", f"{n} participant{'' if n == 1 else 's'} ({names}) in {paths.team_file}"))
    try:
        team.audit_model()  # agent CLIs only: the audit needs a model of its own
    except AutodevError as e:
        checks.append(Check(FAIL, "audit", e.message, e.fix))
    return team


def _tests(paths: RunPaths) -> Check:
    """The test command a `done`'s evidence runs (SPEC §22): configured, detected, or none."""
    from autodev.config import load_config
    from autodev.harness.testresults import describe

    try:
        config = load_config(paths.config_file)
    except AutodevError:
        return Check(WARN, "tests", "config.toml does not load (see the config line)")
    if config.done_evidence == "off":
        return Check(OK, "tests", 'doneEvidence = "off": a done has no test evidence')
    return Check(
        OK, "tests", describe(paths.repo, config.test_command) + f"; doneEvidence = {config.done_evidence!r}"
    )


def _sandbox(paths: RunPaths) -> Check:
    """What `start` gets from the sandbox key, and, when bwrap is in use, a command actually run
    in the room a participant's commands get (its hidden folders, network and exposed paths)."""
    from autodev.config import RunConfig, load_config
    from autodev.guard import bwrap, sandbox

    try:
        cfg = load_config(paths.config_file)
    except AutodevError:
        cfg = RunConfig()  # the team check above already reports the broken config
    installed = bwrap.find_bwrap()
    try:
        box = sandbox.resolve(cfg.sandbox)  # the same answer `start` gets
    except AutodevError as e:
        return Check(FAIL, "sandbox", e.message, bwrap.BROKEN_FIX if installed else e.fix)
    if box.active:
        room = box.room(
            paths.repo,
            hide=sandbox.hidden(paths.run_dir),
            network=cfg.command_network,
            expose=[*cfg.sandbox_read, *cfg.sandbox_expose],
        )
        why = sandbox.trial(room)
        if why:
            return Check(FAIL, "sandbox", why, bwrap.BROKEN_FIX)
        missing = [p for p in room.expose if not os.path.exists(os.path.expanduser(p))]
        if missing:  # the room is built without them: say so rather than let a command wonder
            return Check(
                WARN,
                "sandbox",
                f"{box.describe()}: a test command ran in it, but sandboxRead names what is not "
                f"there: {', '.join(missing)}",
                "fix or remove those paths in .autodev/config.toml",
            )
        return Check(OK, "sandbox", f"{box.describe()}: a test command ran in it")
    if box.warning and installed:  # there, but it cannot build the sandbox: start runs unsandboxed
        return Check(FAIL, "sandbox", f"commands would run unsandboxed: {box.problem}", bwrap.BROKEN_FIX)
    if box.warning:
        return Check(
            WARN,
            "sandbox",
            f"commands run unsandboxed: {box.problem}",
            "install bubblewrap (e.g. `apt-get install bubblewrap`)",
        )
    return Check(OK, "sandbox", box.describe())


def _daemon(paths: RunPaths) -> Check:
    from autodev.store.lock import DaemonLock

    pid = DaemonLock.holder(paths.lock)
    if pid:
        return Check(
            FAIL, "daemon", f"a daemon (pid {pid}) already runs this repository", "`autodev stop` first"
        )
    return Check(OK, "daemon", "none running here")


def disk_check(folder: Path, min_free_mb: int = MIN_FREE_MB) -> Check:
    probe = Path(folder)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free_mb = shutil.disk_usage(probe).free // (1024 * 1024)
    if free_mb < min_free_mb:
        # A warning, as `start` sees it: start runs on little space (a write that finds the disk
        # full faults the run, which says so); only an unwritable folder stops it (the run-folder check).
        return Check(
            WARN,
            "disk",
            f"{free_mb} MB free for the run folder {folder} (under {min_free_mb} MB): start works, "
            "but the run faults when the disk fills",
            "free some space, or set AUTODEV_HOME to a folder on a larger disk",
        )
    return Check(OK, "disk", f"{free_mb} MB free for the run folder {folder}")


def home_check(run_dir: Path) -> Check:
    """The run folder can be created and written: a file is written there (or in the nearest
    folder that exists) and removed, as `start` would."""
    from autodev.store.faults import writable

    fault = writable(run_dir)
    if fault is not None:
        return Check(FAIL, "run folder", fault.message, fault.fix)
    return Check(OK, "run folder", f"{run_dir} is writable")


class CheckJson(TypedDict):
    """One check in `autodev doctor --json`: `Check`'s fields, in its order."""

    status: str
    name: str
    detail: str
    fix: str


def as_dicts(checks: list[Check]) -> list[CheckJson]:
    return [CheckJson(status=c.status, name=c.name, detail=c.detail, fix=c.fix) for c in checks]
