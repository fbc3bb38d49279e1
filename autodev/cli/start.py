"""`autodev start`: the checks before a run, then the daemon, detached or in this terminal."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from autodev.cli.root import app, current_paths
from autodev.errors import UsageError
from autodev.host import hostproc, spawn
from autodev.host.hostproc import PYTHON_SAFE
from autodev.store.paths import RunPaths

if TYPE_CHECKING:
    from autodev.config import RunConfig
    from autodev.config.team import Team


@app.command()
def start(
    objective: str | None = typer.Argument(None, help="The objective (the first user message)."),
    foreground: bool = typer.Option(False, "--foreground", help="Run attached to this terminal."),
    until_idle: bool = typer.Option(
        False, "--until-idle", help="With --foreground: return when the run is complete (0) or needs you (3)."
    ),
    best_of: int | None = typer.Option(
        None,
        "--best-of",
        help="Start a group of N runs of the team, each in its own worktree (docs/best-of.md).",
    ),
    parallel: int | None = typer.Option(None, "--parallel", help="With --best-of: at most K runs at once."),
    vary: str | None = typer.Option(
        None,
        "--vary",
        help="With --best-of: team=a.toml,b.toml (run k gets the k-th team file, cycling), or model=m1,m2.",
    ),
    group_max_cost_usd: float | None = typer.Option(
        None,
        "--group-max-cost-usd",
        help="With --best-of: stop the group's runs once they spent this together.",
    ),
    resume_group: str | None = typer.Option(
        None, "--resume-group", help="Drive the group ID again (after its driver was killed)."
    ),
):
    """Start (or resume) the run's daemon: detached unless --foreground; or a best-of-N group."""
    if best_of is not None or resume_group is not None or parallel or vary or group_max_cost_usd:
        from autodev.cli.best import start_group

        if foreground or until_idle:
            raise UsageError(
                "a group's runs are detached: --foreground does not go with --best-of", "drop --foreground"
            )
        start_group(objective, best_of, parallel, vary, group_max_cost_usd, resume_group)
        return
    from autodev.guard import keys
    from autodev.store import inbox

    keys.receive()  # set when this is the keyless re-execution of `start --foreground` below
    if until_idle and not foreground:
        raise UsageError("--until-idle only works with --foreground", "add --foreground")
    paths = current_paths()
    cfg, key_names = _preflight(paths)
    _sandbox_and_keys(cfg, key_names, foreground)
    _say_queued(paths, objective)
    staged = None
    if objective:
        # Staged, not queued: the daemon queues it once it holds the lock, so the loser of two
        # simultaneous starts leaves no trace on the thread.
        paths.ensure()
        staged = inbox.stage(paths.inbox, "send", text=objective, objective=True)
    if foreground:
        raise typer.Exit(_run_here(paths, until_idle, staged))
    _wait_started(paths, _spawn_daemon(paths, key_names, staged), staged)


def _sandbox_and_keys(cfg: RunConfig, key_names: list[str], foreground: bool) -> None:
    """The sandbox resolved and said; in the foreground, this process started again without the
    keys in its environment when it has them."""
    from autodev.guard import keys
    from autodev.guard import sandbox as sandboxmod
    from autodev.guard.redact import secret_values

    box = sandboxmod.resolve(cfg.sandbox)  # sandbox = "bwrap" without bwrap: exit 2 here
    if foreground and not keys.received() and secret_values(os.environ, key_names):
        # The daemon runs in this very process: start it afresh without the keys in its
        # environment (/proc/<pid>/environ keeps what a process started with).
        env, _fd = keys.handover(key_names)
        sys.stdout.flush()
        spawn.execve([sys.executable, *PYTHON_SAFE, "-m", "autodev", *sys.argv[1:]], env, "autodev")
    print(f"sandbox: {box.describe()}")
    if box.warning:
        print(f"autodev: warning: {box.warning}", file=sys.stderr)
    _warn_telemetry(cfg)


def _preflight(paths: RunPaths) -> tuple[RunConfig, list[str]]:
    """What `start` refuses before a daemon starts (exit 2): the config and team files, the
    providers' keys, a run folder it cannot write, MCP servers, agent CLIs and a browser that
    cannot start, a daemon already running. Returns the config and the team's key names."""
    from autodev.config import load_config, load_team, provider_problems
    from autodev.errors import DaemonRunningError, ProviderSetupError
    from autodev.guard import keys
    from autodev.store.faults import writable
    from autodev.store.lock import DaemonLock

    cfg = load_config(paths.config_file)
    team = load_team(paths.team_file)
    team.audit_model()  # a team of agent CLIs only: the audit's model must be named, not found at `done`
    if team.uses_scripted():
        from autodev.scripted import load_script

        load_script(team.script_path(paths.team_file))
    key_names = team.key_names()
    problems = provider_problems(team, {**os.environ, **keys.all_keys(key_names)})
    if problems:
        raise ProviderSetupError(
            "a participant's provider is missing what it needs:\n  - " + "\n  - ".join(problems),
            "set the variables named above, then start again",
        )
    fault = writable(paths.run_dir)  # a read-only or full AUTODEV_HOME: exit 2 before the run
    if fault is not None:
        raise fault
    _check_tool_sources(paths, team)
    _check_gemini(paths, team)
    _check_browser(team)
    pid = DaemonLock.holder(paths.lock)
    if pid:
        raise DaemonRunningError(
            f"a daemon (pid {pid}) is already running this repository",
            "use `autodev status`, `autodev send`, or `autodev stop` first",
        )
    return cfg, key_names


def _run_here(paths: RunPaths, until_idle: bool, staged: Path | None) -> int:
    """`--foreground`: the daemon in this process, its posts echoed; its exit code."""
    from autodev.daemon import Daemon
    from autodev.store import inbox
    from autodev.user.render import Line, console, post_text

    paths.ensure()
    hostproc.leave(paths.repo, paths.run_dir)  # the daemon never works from inside the repository

    con = console()

    def echo(post: Line) -> None:
        con.print(post_text(post))

    try:
        code = Daemon(paths.repo, until_idle=until_idle, out=echo, staged=staged).run()
    finally:
        inbox.discard(staged)  # still staged: this start lost, or failed before the lock
    _print_outcome(paths)
    return code


def _spawn_daemon(paths: RunPaths, key_names: list[str], staged: Path | None) -> spawn.ByteProcess:
    """The detached daemon (`python -m autodev.daemon`), its output into daemon.log."""
    from autodev.guard import keys

    paths.ensure()
    log = open(os.open(paths.daemon_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab")
    # the daemon starts without the keys in its environment; the keys this process was handed
    # (a best-of group's driver starts runs so) go on to it
    env, keys_fd = keys.handover(key_names, base={**os.environ, **keys.all_keys(key_names)})
    try:
        return spawn.popen(
            [
                sys.executable,
                *PYTHON_SAFE,
                "-m",
                "autodev.daemon",
                str(paths.repo),
                *([str(staged)] if staged else []),
            ],
            "autodev",
            stdin=spawn.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            cwd=paths.run_dir,  # not the repository: `-m` would put it first on sys.path
            env=env,
            pass_fds=(keys_fd,),
        )
    finally:
        os.close(keys_fd)


def _wait_started(paths: RunPaths, proc: spawn.ByteProcess, staged: Path | None) -> None:
    """Started means: it holds the lock AND opened (validated) the logs, which it records in
    state. A daemon that exits at once: its log's tail, and its exit code."""
    from autodev.store import inbox
    from autodev.store.state import StateFile

    state = StateFile(paths.state)
    deadline = time.time() + 15
    while time.time() < deadline:
        st = state.read()
        if st.pid == proc.pid and st.daemon == "running":
            print(
                f"daemon started (pid {proc.pid}); follow it with `autodev thread --follow` "
                "or `autodev status`"
            )
            return
        if proc.poll() is not None:
            if proc.returncode == 0:  # nothing to do: e.g. the run was already complete
                _print_outcome(paths)
                return
            inbox.discard(staged)
            tail = paths.daemon_log.read_text(errors="replace")[-2000:]
            print(f"autodev: the daemon exited at start (code {proc.returncode}):\n{tail}", file=sys.stderr)
            raise typer.Exit(proc.returncode or 1)
        time.sleep(0.05)
    print(f"daemon (pid {proc.pid}) is slow to start; check {paths.daemon_log}", file=sys.stderr)


def _say_queued(paths: RunPaths, objective: str | None) -> None:
    """What was queued while no daemon ran, which this start applies first, in order; the
    objective is a message, so it replaces a queued stop or pause as `send` would."""
    from autodev.store import queued

    if objective:
        removed = queued.cancel_for(paths, "send")
        if removed:
            print(queued.replaced_text(removed, "objective", "now"))
    queue = queued.items(paths)
    if queue:
        line = f"queued while no daemon ran, applied now in order: {queued.summary(queue)}"
        if any(i.kind == "stop" for i in queue):
            line += " (the queued stop ends the run again; `autodev start` once more runs it)"
        print(line)


def _check_tool_sources(paths: RunPaths, team: Team) -> None:
    """MCP servers that cannot start are refused before the daemon starts."""
    from autodev.errors import ToolSetupError
    from autodev.harness.mcp import start_fix, start_problem

    for name, server in team.mcp.items():
        problem = start_problem(name, server.command, paths.repo / (server.cwd or "."))
        if problem:
            raise ToolSetupError(
                f"{problem} (command: {' '.join([server.command, *server.args])})", start_fix(name)
            )


def _check_gemini(paths: RunPaths, team: Team) -> None:
    """A Gemini CLI participant whose settings file Gemini would ignore: refused (exit 2)."""
    if not any("gemini" in p.agents() for p in team.participants):
        return
    from autodev.agents.adapters import GEMINI_SETTINGS_FIX
    from autodev.errors import ToolSetupError
    from autodev.setup.doctor import gemini_settings_problem

    why = gemini_settings_problem(paths, os.environ)
    if why:
        raise ToolSetupError(why, GEMINI_SETTINGS_FIX)


def _warn_telemetry(cfg: RunConfig) -> None:
    """Telemetry on without its extra: the run goes on untraced, said here where the user looks
    (an OTEL endpoint set for other programs must not stop a run; docs/telemetry.md)."""
    from autodev.telemetry import not_installed, resolve

    on = resolve(cfg.telemetry)
    missing = on and not_installed(on)
    if missing:
        print(f"autodev: warning: {missing.message}; the run goes on without telemetry", file=sys.stderr)
        print(f"  fix: {missing.fix}", file=sys.stderr)


def _check_browser(team: Team) -> None:
    """Participants granted the browser on a machine that cannot run it: refused before the
    daemon starts (Playwright imported and Chromium launched, as their first call would)."""
    users = [p.name for p in team.participants if "browser" in p.tools]
    if not users:
        return
    from autodev.errors import ToolSetupError
    from autodev.harness.browser import fix_for, launch_problem

    why = launch_problem()
    if why:
        raise ToolSetupError(
            f"{', '.join(users)} {'use' if len(users) > 1 else 'uses'} the browser capability "
            f'(tools = ["browser"] in .autodev/team.toml), but {why}',
            fix_for(why) + '; or take "browser" out of their tools',
        )


def _print_outcome(paths: RunPaths) -> None:
    from autodev.store.state import StateFile

    st = StateFile(paths.state).read()
    r = st.reason.dump() if st.reason else {}
    line = f"run {st.state}"
    if r.get("text"):
        line += f": {r['text']}"
    print(line)
    if r.get("continue") and st.state not in ("complete",):
        from autodev.rules.reasons import continue_line
        from autodev.store.lock import DaemonLock

        holder = DaemonLock.holder(paths.lock)  # a foreground daemon (this process) has ended
        print(f"  continue with: {continue_line(r, bool(holder) and holder != os.getpid())}")
