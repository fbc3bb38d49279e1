"""`autodev doctor`: will `start` work here? One line per check, with the fix; starts nothing.

Offline by default and free of litellm: provider keys are checked against a small table of the
variables litellm asks for (a test keeps the table equal to litellm's answer). `--online` asks
litellm itself and contacts each participant's `api_base`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from autodev.errors import AutodevError
from autodev.host import spawn
from autodev.store.paths import RunPaths, autodev_home, find_repo

OK, WARN, FAIL = "ok", "warn", "FAIL"

# What litellm's validate_environment reports for `provider/...` models with nothing set.
# tests/test_doctor.py checks every row against litellm, so the table cannot drift unseen.
PROVIDER_KEYS: dict[str, list[str]] = {
    "openai": ["OPENAI_API_KEY"],
    "anthropic": ["ANTHROPIC_API_KEY"],
    "gemini": ["GOOGLE_API_KEY", "GEMINI_API_KEY"],
    "openrouter": ["OPENROUTER_API_KEY"],
    "mistral": ["MISTRAL_API_KEY"],
    "groq": ["GROQ_API_KEY"],
    "deepseek": ["DEEPSEEK_API_KEY"],
    "xai": ["XAI_API_KEY"],
    "together_ai": ["TOGETHERAI_API_KEY"],
    "fireworks_ai": ["FIREWORKS_AI_API_KEY"],
    "cohere": ["COHERE_API_KEY"],
    "perplexity": ["PERPLEXITYAI_API_KEY"],
    "cerebras": ["CEREBRAS_API_KEY"],
    "azure": ["AZURE_API_BASE", "AZURE_API_VERSION", "AZURE_API_KEY"],
    "bedrock": ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"],
    "vertex_ai": ["VERTEXAI_PROJECT", "VERTEXAI_LOCATION"],
    "huggingface": ["HUGGINGFACE_API_KEY"],
    "deepinfra": ["DEEPINFRA_API_KEY"],
    "ollama": [],  # litellm defaults the endpoint to the local server
    "ollama_chat": [],
}

MIN_FREE_MB = 200
MCP_START_SEC = 30.0  # the longest doctor waits for an MCP server's tool list


@dataclass
class Check:
    status: str  # ok, warn (start works, something optional is missing) or FAIL (start would not work)
    name: str
    detail: str
    fix: str = ""


def run_checks(start: Path | None = None, online: bool = False, environ: Mapping[str, str] | None = None):
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
        checks.extend(_providers(team, env, online))
        checks.extend(_agents(team, env, paths))
        checks.extend(_mcp(paths, team))
        checks.extend(_browser(team))
    checks.extend(_telemetry(paths))
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
    idents = []
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


def _team(paths: RunPaths, checks: list[Check]):
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
    from autodev.guard import sandbox

    try:
        cfg = load_config(paths.config_file)
    except AutodevError:
        cfg = RunConfig()  # the team check above already reports the broken config
    installed = sandbox.find_bwrap()
    try:
        box = sandbox.resolve(cfg.sandbox)  # the same answer `start` gets
    except AutodevError as e:
        return Check(FAIL, "sandbox", e.message, sandbox.BROKEN_FIX if installed else e.fix)
    if box.active:
        room = box.room(
            paths.repo,
            hide=sandbox.hidden(paths.run_dir),
            network=cfg.command_network,
            expose=[*cfg.sandbox_read, *cfg.sandbox_expose],
        )
        why = sandbox.trial(room)
        if why:
            return Check(FAIL, "sandbox", why, sandbox.BROKEN_FIX)
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
        return Check(FAIL, "sandbox", f"commands would run unsandboxed: {box.problem}", sandbox.BROKEN_FIX)
    if box.warning:
        return Check(
            WARN,
            "sandbox",
            f"commands run unsandboxed: {box.problem}",
            "install bubblewrap (e.g. `apt-get install bubblewrap`)",
        )
    return Check(OK, "sandbox", box.describe())


def _providers(team, env: Mapping[str, str], online: bool) -> list[Check]:
    from autodev.config import provider_problems

    unknown: list[str] = []

    def offline_lookup(model: str) -> tuple[list[str], str]:
        provider = model.split("/", 1)[0] if "/" in model else None
        if provider in PROVIDER_KEYS:
            return list(PROVIDER_KEYS[provider]), ""
        unknown.append(model)
        return [], ""

    lookup = None if online else offline_lookup
    out: list[Check] = []
    subjects = [
        (f"provider: {p.name}", p, team.model_copy(update={"participants": [p], "audit": None}))
        for p in team.participants
        if not getattr(p, "agent", None)  # a coding-agent CLI brings its own login
    ]
    if team.audit is not None:
        subjects.append(
            ("provider: audit", team.audit, team.model_copy(update={"participants": [], "audit": team.audit}))
        )
    for name, who, sub in subjects:
        unknown.clear()
        problems = provider_problems(sub, env, lookup=lookup)
        models = [who.model, *getattr(who, "failover", [])]
        if problems:
            out.append(Check(FAIL, name, " | ".join(problems)))  # each sentence says what to set
            continue
        base = getattr(who, "api_base", None)
        if base and online:
            out.append(_reach(name, base))
        elif unknown:
            out.append(
                Check(
                    WARN,
                    name,
                    f"{', '.join(unknown)}: provider not known offline, key not checked",
                    'run `autodev doctor --online` (asks litellm), or write the model as "provider/model"',
                )
            )
        elif base:
            out.append(Check(OK, name, f"{', '.join(models)} at {base} (not contacted; --online checks it)"))
        else:
            out.append(Check(OK, name, f"{', '.join(models)}: what the provider needs is set"))
    return out


def _reach(name: str, base: str) -> Check:
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(urllib.request.Request(base, method="GET"), timeout=5).close()
    except urllib.error.HTTPError:
        pass  # it answered: reachable, whatever it thinks of a bare GET
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        return Check(
            FAIL,
            name,
            f"{base} is not reachable ({reason})",
            "start the server, or fix api_base in team.toml",
        )
    return Check(OK, name, f"{base} answers")


def gemini_settings_problem(paths: RunPaths, env: Mapping[str, str]) -> str:
    """Why the Gemini CLI would not read autodev's settings file here ("" when it would)."""
    from autodev.agents.adapters import gemini_settings_folder

    folder, blocker = gemini_settings_folder(paths.run_dir / "agents", env)
    if blocker is None:
        return ""
    return (
        f"Gemini CLI 0.61.0 ignores a settings file below the world-writable {blocker}, so autodev's "
        f"MCP server (its post tool) would not reach it from {folder}"
    )


def _agents(team, env: Mapping[str, str], team_paths: RunPaths) -> list[Check]:
    """Per agent CLI of each participant (its failovers too): found, its version, logged in.
    Only `--version` runs: no session starts and no model is called."""
    from autodev.agents import adapters

    out = []
    for p in team.participants:
        for i, agent in enumerate(p.agents() if hasattr(p, "agents") else []):
            name = f"agent: {p.name}" + (f" (failover {agent})" if i else "")
            ad = adapters.adapter(agent)
            path = adapters.find_binary(agent, env)
            if not path:
                out.append(
                    Check(
                        FAIL,
                        name,
                        f"the {agent} CLI is not on PATH (nor named by {ad.bin_env})",
                        f"install the {agent} CLI and log in, or set {ad.bin_env} to its path",
                    )
                )
                continue
            if agent == "gemini":
                blocked = gemini_settings_problem(team_paths, env)
                if blocked:
                    out.append(Check(FAIL, name, blocked, adapters.GEMINI_SETTINGS_FIX))
                    continue
            version = ad.version(path)
            logged, how = ad.login(env, p.api_key_env, path)
            detail = f"{agent} CLI at {path}, version {version or 'unknown'}; {how}"
            if version is None:
                out.append(Check(WARN, name, detail, f"`{path} --version` failed: check the installation"))
            elif not logged:
                fix = (
                    f"set {p.api_key_env} (api_key_env of {p.name})"
                    if p.api_key_env
                    else f"log in once with `{agent}` in a terminal, or set api_key_env for its API-key mode"
                )
                out.append(Check(WARN, name, detail, fix))
            else:
                out.append(Check(OK, name, detail))
    return out


def _mcp(paths: RunPaths, team) -> list[Check]:
    """Each MCP server started as the daemon starts it (its folder, command, environment), its
    tool list read within its timeout_sec, then stopped."""
    servers = getattr(team, "mcp", None) or {}
    if not servers:
        return []
    import tempfile

    from autodev.config import RunConfig, load_config
    from autodev.errors import ToolSetupError
    from autodev.guard import sandbox
    from autodev.harness.mcp import McpHub, start_fix, start_problem  # the same tests `start` applies

    try:  # the network confinement `start` gives them (a broken config or sandbox: reported above)
        cfg = load_config(paths.config_file)
        offline = sandbox.resolve(cfg.sandbox).offline
    except AutodevError:
        cfg, offline = RunConfig(), None
    out = []
    for name, server in servers.items():
        shown = f"mcp: {name}"
        problem = start_problem(name, server.command, paths.repo / (server.cwd or "."))
        if problem:
            out.append(Check(FAIL, shown, problem, start_fix(name)))
            continue
        with tempfile.TemporaryDirectory(prefix="autodev-doctor-") as logs:
            hub = McpHub(
                {name: server},
                repo=paths.repo,
                log_dir=Path(logs),
                network=cfg.command_network,
                offline=offline,
            )
            try:
                hub.start(timeout=min(server.timeout_sec, MCP_START_SEC))
            except ToolSetupError as e:
                said = e.message.split("\n  full log:")[0].replace("\n    ", " | ").replace("\n  ", "; ")
                out.append(Check(FAIL, shown, said, e.fix))
                continue
            try:
                tools = hub.tools()
            finally:
                hub.stop()
        found = shutil.which(server.command) or server.command
        out.append(Check(OK, shown, f"{' '.join([found, *server.args])}: started, {len(tools)} tools"))
    return out


def _browser(team) -> list[Check]:
    """What `start` checks: Playwright importable and the Chromium it finds launched."""
    users = [p.name for p in team.participants if "browser" in (getattr(p, "tools", None) or [])]
    if not users:
        return []
    from autodev.harness.browser import chromium_path, fix_for, launch_problem

    why = launch_problem()
    if why:
        return [
            Check(FAIL, "browser", f"{', '.join(users)} use the browser capability, but {why}", fix_for(why))
        ]
    return [
        Check(
            OK,
            "browser",
            f"chromium at {chromium_path()} started through Playwright (for {', '.join(users)})",
        )
    ]


def _telemetry(paths: RunPaths) -> list[Check]:
    """When telemetry is on (an OTLP endpoint in the environment or [telemetry]): is the extra
    installed? Without it the run goes on untraced, as `start` warns: a warning, not a FAIL."""
    from autodev.config import load_config
    from autodev.telemetry import not_installed, resolve

    try:
        cfg = resolve(load_config(paths.config_file).telemetry)
    except AutodevError as e:
        return [Check(FAIL, "telemetry", e.message, e.fix)]
    if cfg is None:
        return []
    missing = not_installed(cfg)
    if missing is not None:
        return [Check(WARN, "telemetry", f"{missing.message}: the run would go on untraced", missing.fix)]
    return [Check(OK, "telemetry", f"OpenTelemetry installed; traces to {cfg.traces_url}")]


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


def as_dicts(checks: list[Check]) -> list[dict]:
    return [asdict(c) for c in checks]
