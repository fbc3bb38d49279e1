"""The `autodev` command: parse, call one function, render. Typed errors become friendly
messages with the fix; exit 2 for usage and configuration, 1 for other failures.

Commands that never call a model (send, status, thread, pause, resume, stop, approve, deny,
config, init) must not import litellm: it costs seconds of start-up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import typer

from autodev import actions
from autodev.errors import AutodevError, NotInitializedError, UsageError
from autodev.paths import RunPaths, find_repo

app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Run a team of LLM participants on this git repository.",
)


def _paths(initialized: bool = True) -> RunPaths:
    paths = RunPaths(find_repo())
    if initialized and not paths.team_file.exists():
        from autodev.project import saved_team

        if saved_team(paths.run_dir):  # e.g. after `git clean -fdx`: the run folder kept it
            raise NotInitializedError(
                f"{paths.team_file} is missing, but the run folder {paths.run_dir} keeps the last "
                "team this run used",
                "restore it with `autodev init --from-run`, then run the command again",
            )
        raise NotInitializedError(
            f"{paths.config_dir} has no team.toml", "run `autodev init` (or `autodev init --team pair`) first"
        )
    return paths


def _version(value: bool) -> None:
    if value:
        import platform

        from autodev import __version__

        print(
            f"autodev {__version__} (autodev-team) on Python {platform.python_version()} at {sys.executable}"
        )
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_version,
        is_eager=True,
        help="Print the version and the Python it runs on.",
    ),
):
    """Run a team of LLM participants on this git repository."""


def main() -> None:
    try:
        app()
    except AutodevError as e:
        print(f"autodev: {e.message}", file=sys.stderr)
        if e.fix:
            print(f"  fix: {e.fix}", file=sys.stderr)
        sys.exit(e.exit_code)


# -- set-up ------------------------------------------------------------------------------------


@app.command()
def init(
    team: str | None = typer.Option(None, help="Copy teams/NAME.toml as the team."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing .autodev/."),
    from_run: bool = typer.Option(
        False, "--from-run", help="Restore the team this repository's run last used (after `git clean`)."
    ),
):
    """Create .autodev/ (team.toml, config.toml) from the shipped example."""
    from autodev.project import init_from_run, init_project

    if from_run:
        if team is not None:
            raise UsageError("give --team or --from-run, not both", "autodev init --from-run")
        paths = RunPaths(find_repo())
        folder = init_from_run(paths.repo, paths.run_dir, force)
        print(f"restored {folder}/ from the run folder {paths.run_dir}; continue with: autodev start")
        return
    folder = init_project(find_repo(), team, force)
    print(
        f'wrote {folder}/ — edit team.toml, check with `autodev doctor`, then: autodev start "your objective"'
    )


@app.command()
def doctor(
    online: bool = typer.Option(
        False, "--online", help="Also ask litellm about provider keys and contact each api_base."
    ),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
):
    """Check what `start` needs, without starting anything: exit 0 when it would work, 2 when not."""
    from autodev.doctor import FAIL, as_dicts, run_checks

    checks = run_checks(online=online)
    ready = not any(c.status == FAIL for c in checks)
    if as_json:
        print(json.dumps({"ready": ready, "checks": as_dicts(checks)}, indent=1))
    else:
        for c in checks:
            print(f"{c.status:<4}  {c.name:<18} {c.detail}" + (f"  → fix: {c.fix}" if c.fix else ""))
        print("start would work" if ready else "start would not work: fix the FAIL lines above")
    raise typer.Exit(0 if ready else 2)


@app.command("config")
def config_cmd(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")):
    """Print every configuration key with its value, default and meaning."""
    from autodev.config import config_rows, load_config

    paths = RunPaths(find_repo())
    rows = config_rows(load_config(paths.config_file))
    if as_json:
        print(json.dumps([dict(zip(("key", "value", "default", "meaning"), r)) for r in rows], indent=1))
        return
    from rich.table import Table

    from autodev.render import console

    t = Table(title=f"{paths.config_file}", show_lines=False)
    for col in ("key", "value", "default", "meaning"):
        t.add_column(col, overflow="fold")
    for r in rows:
        t.add_row(*r)
    console().print(t)


# -- the run -------------------------------------------------------------------------------------


@app.command()
def start(
    objective: str | None = typer.Argument(None, help="The objective (the first user message)."),
    foreground: bool = typer.Option(False, "--foreground", help="Run attached to this terminal."),
    until_idle: bool = typer.Option(
        False, "--until-idle", help="With --foreground: return when the run is complete (0) or needs you (3)."
    ),
):
    """Start (or resume) the run's daemon: detached unless --foreground."""
    from autodev import inbox, keys
    from autodev import sandbox as sandboxmod
    from autodev.config import load_config, load_team, provider_problems
    from autodev.daemon import DaemonLock
    from autodev.errors import DaemonRunningError, ProviderSetupError
    from autodev.redact import secret_values

    keys.receive()  # set when this is the keyless re-execution of `start --foreground` below
    if until_idle and not foreground:
        raise UsageError("--until-idle only works with --foreground", "add --foreground")
    paths = _paths()
    cfg = load_config(paths.config_file)
    team = load_team(paths.team_file)
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
    _check_tool_sources(paths, team)
    _note_browser(team)
    pid = DaemonLock.holder(paths.lock)
    if pid:
        raise DaemonRunningError(
            f"a daemon (pid {pid}) is already running this repository",
            "use `autodev status`, `autodev send`, or `autodev stop` first",
        )
    box = sandboxmod.resolve(cfg.sandbox)  # sandbox = "bwrap" without bwrap: exit 2 here
    if foreground and not keys.received() and secret_values(os.environ, key_names):
        # The daemon runs in this very process: start it afresh without the keys in its
        # environment (/proc/<pid>/environ keeps what a process started with).
        env, _fd = keys.handover(key_names)
        sys.stdout.flush()
        os.execve(sys.executable, [sys.executable, "-m", "autodev", *sys.argv[1:]], env)
    print(f"sandbox: {box.describe()}")
    if box.warning:
        print(f"autodev: warning: {box.warning}", file=sys.stderr)
    staged = None
    if objective:
        # Staged, not queued: the daemon queues it once it holds the lock, so the loser of two
        # simultaneous starts leaves no trace on the thread.
        paths.ensure()
        staged = inbox.stage(paths.inbox, "send", text=objective, objective=True)
    if foreground:
        from autodev.daemon import Daemon
        from autodev.render import console, post_text

        con = console()
        try:
            code = Daemon(
                paths.repo, until_idle=until_idle, out=lambda p: con.print(post_text(p)), staged=staged
            ).run()
        finally:
            inbox.discard(staged)  # still staged: this start lost, or failed before the lock
        _print_outcome(paths)
        raise typer.Exit(code)
    paths.ensure()
    log = open(os.open(paths.daemon_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab")
    env, keys_fd = keys.handover(key_names)  # the daemon starts without the keys in its environment
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "autodev.daemon", str(paths.repo), *([str(staged)] if staged else [])],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            cwd=paths.repo,
            env=env,
            pass_fds=(keys_fd,),
        )
    finally:
        os.close(keys_fd)
    from autodev.state import StateFile

    # Started means: it holds the lock AND opened (validated) the logs, which it records in state.
    state = StateFile(paths.state)
    deadline = time.time() + 15
    while time.time() < deadline:
        st = state.read()
        if st.get("pid") == proc.pid and st.get("daemon") == "running":
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


def _check_tool_sources(paths: RunPaths, team) -> None:
    """MCP servers that cannot start are refused before the daemon starts."""
    from autodev.errors import ToolSetupError
    from autodev.harness.mcp import start_fix, start_problem

    for name, server in team.mcp.items():
        problem = start_problem(name, server.command, paths.repo / (server.cwd or "."))
        if problem:
            raise ToolSetupError(
                f"{problem} (command: {' '.join([server.command, *server.args])})", start_fix(name)
            )


def _note_browser(team) -> None:
    """Participants granted the browser on a machine that cannot run it: said once, at start."""
    users = [p.name for p in team.participants if "browser" in p.tools]
    if not users:
        return
    from autodev.harness.browser import INSTALL_HINT, missing

    why = missing()
    if why:
        print(
            f"note: {', '.join(users)} will have no browser tools: {why}; {INSTALL_HINT}",
            file=sys.stderr,
        )


def _print_outcome(paths: RunPaths) -> None:
    from autodev.state import StateFile

    st = StateFile(paths.state).read()
    r = st.get("reason") or {}
    line = f"run {st['state']}"
    if r.get("text"):
        line += f": {r['text']}"
    print(line)
    if r.get("continue") and st["state"] not in ("complete",):
        from autodev.daemon import DaemonLock
        from autodev.reasons import continue_line

        holder = DaemonLock.holder(paths.lock)  # a foreground daemon (this process) has ended
        print(f"  continue with: {continue_line(r, bool(holder) and holder != os.getpid())}")


def _if_no_daemon(paths: RunPaths) -> None:
    """Actions are queued either way; without a daemon nothing applies them until `start`."""
    from autodev.daemon import DaemonLock

    if not DaemonLock.holder(paths.lock):
        print("no daemon is running: `autodev start` applies it and continues the run")


def _read_text(source: str) -> str:
    """A message from stdin (`-`) or a file, whatever its bytes: invalid UTF-8 is kept visible
    as escapes instead of failing."""
    from autodev.journal import safe_text

    try:
        raw = sys.stdin.buffer.read() if source == "-" else open(source, "rb").read()
    except OSError as e:
        raise UsageError(f"cannot read {source}: {e.strerror or e}", "give a readable file") from None
    return safe_text(raw.decode("utf-8", errors="surrogateescape"))


@app.command()
def send(
    text: str | None = typer.Argument(None, help="Your message to the team; - reads it from stdin."),
    file: str | None = typer.Option(None, "--file", "-f", help="Read the message from this file."),
):
    """Send a message to the run (queued; a daemon, or the next `autodev start`, applies it)."""
    if (text is None) == (file is None):
        raise UsageError(
            "give the message as an argument, as - (stdin), or with --file, exactly one of them",
            'autodev send "..."  |  autodev send - < notes.txt  |  autodev send --file notes.txt',
        )
    body = _read_text(file if file is not None else "-") if text in (None, "-") else text
    paths = _paths()
    msg = actions.send(paths, body)
    print(f"sent ({msg['id']})")
    _if_no_daemon(paths)


@app.command()
def approve(gate_id: str | None = typer.Argument(None, help="The gate's id (default: the open gate).")):
    """Approve the open gate."""
    paths = _paths()
    gid = actions.require_gate(paths, gate_id, "approve")
    actions.approve(paths, gid)
    print(f"approval of gate {gid} sent")
    _if_no_daemon(paths)


@app.command()
def deny(
    gate_id: str | None = typer.Argument(None, help="The gate's id (default: the open gate)."),
    reason: str = typer.Option("", "--reason", help="Why, for the declarer."),
):
    """Deny the open gate."""
    paths = _paths()
    gid = actions.require_gate(paths, gate_id, "deny")
    actions.deny(paths, gid, reason)
    print(f"denial of gate {gid} sent")
    _if_no_daemon(paths)


@app.command()
def answer(
    notice_id: str = typer.Argument(..., help="The notice's id (see `autodev status`)."),
    text: str = typer.Argument(..., help="Your answer."),
):
    """Answer a participant's notice; the answer reaches it in its next turn."""
    if not text.strip():
        raise UsageError("the answer is empty; nothing was sent", f'autodev answer {notice_id} "..."')
    paths = _paths()
    actions.require_notice(paths, notice_id)
    actions.answer(paths, notice_id, text)
    print(f"answer to notice {notice_id} sent")
    _if_no_daemon(paths)


@app.command()
def notice(
    release: str | None = typer.Option(None, "--release", help="Release the hold of notice ID."),
    hold: str | None = typer.Option(
        None, "--hold", help="Pin the hold of notice ID (user messages no longer release it)."
    ),
):
    """Pin or release the capability a notice holds."""
    if (release is None) == (hold is None):
        raise UsageError("give exactly one of --release ID or --hold ID", "e.g. `autodev notice --release 3`")
    nid, action = (release, "release") if release is not None else (hold, "hold")
    paths = _paths()
    actions.require_notice(paths, nid)
    actions.notice(paths, nid, action)
    print(f"{action} of notice {nid} sent")


def _control(action: str) -> None:
    paths = _paths()
    actions.control(paths, action)
    from autodev.daemon import DaemonLock

    if DaemonLock.holder(paths.lock):
        print(f"{action} requested; the daemon applies it at the next turn boundary")
    else:
        tail = " and continues the run" if action == "resume" else ""
        print(f"{action} queued; no daemon is running: the next `autodev start` applies it{tail}")


@app.command()
def pause():
    """Hold the run at the next turn boundary."""
    _control("pause")


@app.command()
def resume():
    """Release a paused run."""
    _control("resume")


@app.command()
def stop():
    """End the run after the turn in flight."""
    _control("stop")


# -- looking -------------------------------------------------------------------------------------


def _status_paths() -> RunPaths:
    """Status works without .autodev/ when a run folder exists: it says what is missing."""
    paths = RunPaths(find_repo())
    if not paths.team_file.exists() and not paths.run_dir.exists():
        return _paths()  # nothing here at all: the usual "run autodev init"
    return paths


@app.command()
def status(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")):
    """State, why it stopped, who speaks next, what needs you, and per-participant figures."""
    from autodev.status import gather, render

    data = gather(_status_paths())
    if as_json:
        print(json.dumps(data, indent=1, default=str))
    else:
        render(data)


@app.command()
def thread(
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new posts."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per line."),
    last: int = typer.Option(50, "--last", "-n", help="How many of the newest posts to show."),
):
    """Print the thread."""
    from autodev.journal import read_tail
    from autodev.render import console, post_text

    paths = _paths()
    con = console()

    def show(posts):
        for p in posts:
            if as_json:
                print(json.dumps(p, ensure_ascii=False), flush=True)
            else:
                con.print(post_text(p))

    posts = read_tail(paths.thread, last)
    show(posts)
    if not follow:
        return
    from watchfiles import watch

    seen = posts[-1]["seq"] if posts else 0
    paths.ensure()
    for _ in watch(
        paths.run_dir,
        watch_filter=lambda c, p: p.endswith("thread.jsonl"),
        yield_on_timeout=True,
        rust_timeout=1000,
    ):
        new = [p for p in read_tail(paths.thread, 200) if p["seq"] > seen]
        if new:
            show(new)
            seen = new[-1]["seq"]


runs_app = typer.Typer(
    no_args_is_help=False,
    invoke_without_command=True,
    help="Every run on this machine: list, totals, clean-up.",
)
app.add_typer(runs_app, name="runs")


@runs_app.callback()
def runs_list(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")
):
    """List runs across repositories, newest first (works outside a repository)."""
    if ctx.invoked_subcommand:
        return
    from autodev import runs

    rows = runs.listing()
    if as_json:
        print(json.dumps(rows, indent=1))
    else:
        runs.render_listing(rows)


@runs_app.command("stats")
def runs_stats(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")):
    """Totals over every run, and usage per model."""
    from autodev import runs

    s = runs.stats()
    if as_json:
        print(json.dumps(s, indent=1))
    else:
        runs.render_stats(s)


@runs_app.command("prune")
def runs_prune(
    older_than: str = typer.Option(..., "--older-than", help="Age of the last activity, e.g. 30d, 12h."),
):
    """Remove run folders older than the age (never one whose daemon is alive), and forget
    runs whose folder was deleted by hand."""
    from autodev import runs

    out = runs.prune(runs.parse_age(older_than))
    for r in out["removed"]:
        print(f"removed {r['run_dir']} ({r['repo']}, run {r['run']})")
    for r in out["missing"]:
        print(f"forgot {r['run_dir']} ({r['repo']}, run {r['run']}): its folder is gone")
    for r in out["refused"]:
        print(f"kept {r['run_dir']} ({r['repo']}): {r['why']}", file=sys.stderr)
    if not any(out.values()):
        print("nothing to prune")
    if out["refused"]:
        raise typer.Exit(1)


@app.command()
def panel():
    """Watch the run live and answer it from the keyboard (works with or without a daemon)."""
    from autodev.panel import run_panel  # Textual loads only here; never litellm

    run_panel(_paths().repo)


@app.command()
def demo(keep: bool = typer.Option(False, "--keep", help="Keep the throwaway repository.")):
    """Run a whole scripted team offline on a throwaway repository, showing every move."""
    from autodev.demo import run_demo

    raise typer.Exit(run_demo(keep=keep))


if __name__ == "__main__":
    main()
