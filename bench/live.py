"""Real runs for the benchmarks: a throwaway git repository with a scripted trio, the real
`python -m autodev` CLI in a subprocess with its own AUTODEV_HOME, and readers for what the run
left in its run folder. Nothing here reaches beyond 127.0.0.1 (the scripted model is local).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import tomli_w

from bench.data import TEAM

GIT_ID = {
    "GIT_AUTHOR_NAME": "autodev bench",
    "GIT_AUTHOR_EMAIL": "bench@autodev.invalid",
    "GIT_COMMITTER_NAME": "autodev bench",
    "GIT_COMMITTER_EMAIL": "bench@autodev.invalid",
}
WRITERS = {"builder"}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def make_repo(root: Path, steps: list[dict], config: dict | None = None) -> Path:
    """A git repository with one commit and `.autodev/` for the trio, served by `steps`."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.name", GIT_ID["GIT_AUTHOR_NAME"])
    _git(repo, "config", "user.email", GIT_ID["GIT_AUTHOR_EMAIL"])
    (repo / "README.md").write_text("# bench repo\n")
    (repo / ".git" / "info" / "exclude").write_text(".autodev/\n__pycache__/\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "start")
    cfg = repo / ".autodev"
    cfg.mkdir()
    team = {
        "participants": [
            {"name": n, "model": "scripted", "write": n in WRITERS, "lane": f"{n} of the benchmark trio"}
            for n in TEAM
        ],
        "audit": {"model": "scripted"},
        "scripted": {"path": "script.toml"},
    }
    (cfg / "team.toml").write_text(tomli_w.dumps(team))
    (cfg / "script.toml").write_text(tomli_w.dumps({"step": steps}))
    (cfg / "config.toml").write_text(tomli_w.dumps(config or {}))
    return repo


def post_step(who: str, kind: str, text: str, handoff: str | None = None) -> dict:
    args = {"kind": kind, "text": text}
    if handoff:
        args["handoff"] = handoff
    return {"participant": who, "calls": [{"tool": "post", "args": args}]}


def successor(who: str) -> str:
    return TEAM[(TEAM.index(who) + 1) % len(TEAM)]


def rotation_steps(turns: int) -> list[dict]:
    """A script whose run makes exactly `turns` turns, one model request each, that never
    pauses: the trio hands the turn round builder → reviewer → tester (so the A-B-A-B breaker
    never fires), the last turn posts `done` and the audit accepts it."""
    kinds = {"builder": ["work_done", "say"], "reviewer": ["say", "handoff"], "tester": ["handoff", "say"]}
    steps = []
    for t in range(1, turns + 1):
        who = TEAM[(t - 1) % len(TEAM)]  # first by name speaks first, then each hands on
        if t == turns:
            steps.append(post_step(who, "done", f"Turn {t}: the objective is complete."))
            break
        kind = kinds[who][(t // len(TEAM)) % 2]
        steps.append(post_step(who, kind, f"Turn {t}: {kind} from {who}, over to the next.", successor(who)))
    steps.append(
        {"participant": "audit", "calls": [{"tool": "verdict", "args": {"accept": True, "gap": ""}}]}
    )
    return steps


def chatter_steps(per_participant: int, ask_user: bool = True) -> list[dict]:
    """For runs on a seeded thread, where the first speaker depends on the seed: every member
    chats `per_participant` times (handing on), then asks the user, which idles the run."""
    steps = []
    for who in TEAM:
        for i in range(per_participant):
            steps.append(post_step(who, "say", f"{who} note {i + 1}", successor(who)))
        if ask_user:
            steps.append(post_step(who, "say", f"{who}: is this what you want?", "user"))
    return steps


_ENV_LOCK = threading.Lock()  # run_dir() briefly changes this process's environment


def run_dir(repo: Path, home: Path) -> Path:
    """The run folder autodev uses for `repo` under AUTODEV_HOME=`home` (asked of autodev itself,
    which reads the variable; the lock keeps benchmarks running in threads apart)."""
    from autodev.store.paths import RunPaths

    with _ENV_LOCK:
        old = os.environ.get("AUTODEV_HOME")
        os.environ["AUTODEV_HOME"] = str(home)
        try:
            return RunPaths(repo).run_dir
        finally:
            if old is None:
                os.environ.pop("AUTODEV_HOME", None)
            else:
                os.environ["AUTODEV_HOME"] = old


def env_for(home: Path) -> dict:
    with _ENV_LOCK:
        env = {**os.environ, **GIT_ID, "AUTODEV_HOME": str(home)}
    # How autodev itself imports litellm: without it, litellm fetches its price map first.
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return env


@dataclass
class Exited:
    code: int
    seconds: float
    peak_kb: int  # the process's own peak resident set (VmHWM), 0 if never sampled
    rss_kb: int  # its resident set at the last sample before it exited
    stdout: str
    stderr: str


class Child:
    """One `python -m autodev ...` in its own process group; stdout/stderr go to files so a
    chatty child never blocks on a full pipe."""

    def __init__(self, repo: Path, home: Path, *args: str, python_args: tuple[str, ...] = ()):
        self.logs = home / "bench-logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        stamp = f"{time.monotonic_ns()}"
        self.out_path, self.err_path = self.logs / f"{stamp}.out", self.logs / f"{stamp}.err"
        self.started = time.perf_counter()
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, *python_args, *(["-m", "autodev", *args] if args else [])],
                cwd=repo,
                env=env_for(home),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        self.pid = self.proc.pid

    def memory(self) -> tuple[int, int]:
        """(VmHWM, VmRSS) in KiB from /proc: this process alone. (wait4's ru_maxrss would also
        count forked children, which briefly share the parent's pages before exec.)"""
        try:
            text = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:
            return 0, 0
        vals = {}
        for line in text.splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                vals[key] = int(rest.split()[0])
        return vals.get("VmHWM", 0), vals.get("VmRSS", 0)

    def wait(self, timeout: float) -> Exited:
        deadline = time.monotonic() + timeout
        peak = rss = 0
        while True:
            hwm, now = self.memory()
            if now:  # a zombie has no memory left to report
                peak, rss = max(peak, hwm), now
            pid, status, _ = os.wait4(self.pid, os.WNOHANG)
            if pid == self.pid:
                break
            if time.monotonic() > deadline:
                self.kill()
                raise TimeoutError(
                    f"`{' '.join(self.proc.args[1:])}` ran past {timeout:.0f} s; "
                    f"stderr:\n{self.err_path.read_text()[-2000:]}"
                )
            time.sleep(0.01)
        secs = time.perf_counter() - self.started
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self._kill_group()  # leftovers of the group (none expected)
        return Exited(
            self.proc.returncode, secs, peak, rss, self.out_path.read_text(), self.err_path.read_text()
        )

    def _kill_group(self) -> None:
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def kill(self) -> None:
        """kill -9 the child's whole process group, then reap the child."""
        self._kill_group()
        if self.proc.returncode is None:
            try:
                _, status, _ = os.wait4(self.pid, 0)
                self.proc.returncode = os.waitstatus_to_exitcode(status)
            except ChildProcessError:
                pass


def python_snippet(repo: Path, home: Path, code: str, timeout: float = 120) -> Exited:
    """Run `code` in a fresh interpreter (cwd=repo, same environment as the CLI children)."""
    c = Child(repo, home, python_args=("-c", code))
    return c.wait(timeout)


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.endswith("\n"):
                out.append(json.loads(line))
    return out


def epoch(ts: str) -> float:
    """An autodev timestamp (millisecond precision, UTC) as seconds since the epoch."""
    return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()


class EventWatch:
    """Follows events.jsonl as it grows, without re-reading it."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = path.stat().st_size if path.exists() else 0
        self.buf = b""

    def new(self) -> list[dict]:
        if not self.path.exists():
            return []
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        self.offset += len(data)
        self.buf += data
        *lines, self.buf = self.buf.split(b"\n")
        return [json.loads(x) for x in lines if x]

    def wait_for(self, etype: str | tuple[str, ...], child: Child, timeout: float) -> dict:
        types = (etype,) if isinstance(etype, str) else etype
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for e in self.new():
                if e.get("type") in types:
                    return e
            if child.proc.poll() is not None:
                raise RuntimeError(
                    f"the daemon exited ({child.proc.returncode}) before a "
                    f"{etype!r} event:\n{child.err_path.read_text()[-2000:]}"
                )
            time.sleep(0.002)
        child.kill()
        raise TimeoutError(f"no {etype!r} event in {self.path} within {timeout:.0f} s")
