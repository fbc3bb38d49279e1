"""The exporter's process (`python -P -m autodev.telemetry.worker`), started by the daemon
(`telemetry.process`): it derives and sends a run's spans with its own interpreter, so the
daemon's turns never wait on its CPU (issue 33: as a thread, it took about 1 ms of every turn from
the daemon under the GIL).

It reads JSON lines on stdin. The first says what to export and where: `run`, `repo`, `cfg` (the
resolved `Telemetry`), `secrets` (the OTLP header variables) and `redact` (the secret values to
mask). Then `{"h": line}` and `{"e": line}` (a line the daemon appended to the harness log or to
events.jsonl, as written), `{"turn": N}` (a finished turn: exported from the lines handed over,
read from the logs when they lack its beginning), `{"redact": [values]}` (secret values the
daemon learned since, a team edit's new keys: masked from then on, the turn that follows
included), `{"catch_up": N}` (the finished turns before N) and `{"close": seconds}` (send what is queued within that long, the root when the run is complete,
then exit). Each warning goes back as `{"warn": "..."}` on stdout; the daemon writes it into
events.jsonl. Nothing is printed or logged otherwise: secrets arrive over the pipe only.

Without `close` (end of input: the daemon is gone) it exits at once: what it had not sent stays in
the logs, and the next daemon's catch-up sends it. It is also killed with its daemon (it is
started with a parent-death signal), so an old exporter never races a new one's catch-up.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from types import UnionType
from typing import IO, TypeVar, cast

from autodev.telemetry.settings import Telemetry

T = TypeVar("T")


class _Said:
    """Warnings, one JSON line each, on the pipe the daemon reads."""

    def __init__(self, out: IO[str]):
        self.out = out
        self.lock = threading.Lock()

    def __call__(self, message: str) -> None:
        with self.lock:
            self.out.write(json.dumps({"warn": message}) + "\n")
            self.out.flush()


def _object(raw: object, what: str) -> dict[str, object]:
    if not isinstance(raw, dict):
        raise ValueError(f"{what} is {type(raw).__name__}, not an object")
    return {str(k): v for k, v in cast("dict[object, object]", raw).items()}


def _strings(raw: object, what: str) -> list[str]:
    if not isinstance(raw, list):
        raise ValueError(f"{what} is {type(raw).__name__}, not a list")
    return [str(v) for v in cast("list[object]", raw)]


def _field(raw: dict[str, object], name: str, kind: type[T] | UnionType) -> T:
    value = raw[name]
    if not isinstance(value, kind):
        raise ValueError(f"cfg.{name} is {type(value).__name__}")
    return cast("T", value)


def hello(line: str) -> tuple[str, Path, Telemetry, dict[str, str], list[str]]:
    """The first line: the run, its repository, the settings, the header secrets and the values
    to mask."""
    got = _object(json.loads(line), "the first line")
    cfg = _object(got["cfg"], "cfg")
    settings = Telemetry(
        traces_url=_field(cfg, "traces_url", str),
        metrics_url=_field(cfg, "metrics_url", str),
        capture_content=_field(cfg, "capture_content", bool),
        queue_size=_field(cfg, "queue_size", int),
        timeout_sec=float(_field(cfg, "timeout_sec", float | int)),
        latest=_field(cfg, "latest", bool),
    )
    secrets = {k: str(v) for k, v in _object(got["secrets"], "secrets").items()}
    return str(got["run"]), Path(str(got["repo"])), settings, secrets, _strings(got["redact"], "redact")


NICE = 10  # below the daemon's priority (0): the exporter gets what the run leaves


def main(stdin: IO[str] = sys.stdin, stdout: IO[str] = sys.stdout) -> int:
    said = _Said(stdout)
    try:
        run, repo, cfg, secrets, values = hello(stdin.readline())
    except (ValueError, KeyError, TypeError) as e:
        said(
            f"telemetry: the exporter process was started without its settings ({type(e).__name__}: {e}); "
            "the run goes on untraced: `autodev trace export` sends its spans"
        )
        return 2
    from autodev import records
    from autodev.guard.redact import Redactor
    from autodev.store.paths import RunPaths
    from autodev.store.state import StateFile
    from autodev.telemetry.background import Background
    from autodev.telemetry.export import Sender

    paths = RunPaths(repo)
    try:
        redactor = Redactor(values)
        sender = Sender.open(cfg, paths, secrets, redactor.text)
    except Exception as e:  # telemetry never stops a run: said, and the spans stay in the logs
        said(
            f"telemetry: the exporter could not start ({type(e).__name__}: {e}); the run goes on "
            "untraced: `autodev trace export` sends its spans"
        )
        return 1
    records.build_log_schemas()  # now, while the daemon starts, not in its first turns
    bg = Background(sender, run, said)
    for line in stdin:
        msg = json.loads(line)
        if "h" in msg:
            bg.saw("harness", msg["h"])
        elif "e" in msg:
            bg.saw("events", msg["e"])
        elif "turn" in msg:
            bg.turn_done(int(msg["turn"]))
        elif "redact" in msg:  # secret values the daemon learned since (a team edit's keys)
            redactor.learn(_strings(msg["redact"], "redact"))
        elif "catch_up" in msg:
            bg.catch_up(int(msg["catch_up"]))
        elif "close" in msg:
            bg.close(StateFile(paths.state).read(), float(msg["close"]))
            return 0
    return 0  # the daemon is gone without a close: what is not sent stays in the logs


if __name__ == "__main__":
    # The run comes first: where the daemon, its git and the commands want both cores, the
    # exporter waits (on 2 cores its wake-ups otherwise cost the turns 5 to 7%, docs/telemetry.md).
    os.nice(NICE)
    sys.exit(main())
