"""The eval's own files under `--out DIR`: results.jsonl, appended one line per finished task × team
(flushed and fsynced before the next is counted), read back on resume; the patches; and
predictions/<team>.jsonl, derived from both at the end."""

from __future__ import annotations

import json
import os
import shlex
import threading
from pathlib import Path

from pydantic import ValidationError

from autodev.errors import UsageError
from autodev.eval.rows import EvalResult
from autodev.store.journal import JsonObject, is_object


class EvalFileError(UsageError):
    """A file under --out is damaged somewhere other than its torn last line."""


class JsonlFile:
    """Append-only JSON lines: a torn last line (the eval killed mid-append) is cut on open; a bad
    line anywhere else is refused, naming it."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()

    def read(self) -> list[tuple[int, JsonObject]]:
        """The lines, each with its number (a line that is JSON but not an object is refused)."""
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        lines = data.split(b"\n")
        out: list[tuple[int, JsonObject]] = []
        good = 0
        for n, raw in enumerate(lines, start=1):
            if not raw.strip():
                good += len(raw) + 1
                continue
            try:
                out.append((n, _object(raw)))
            except json.JSONDecodeError as e:
                if n == len(lines):  # the last line, without its newline: an append that died
                    self._truncate(good)
                    break
                raise EvalFileError(
                    f"{self.path}:{n} is not a JSON line ({e.msg})",
                    "remove that line (its task × team is run again), or use another --out",
                ) from e
            good += len(raw) + 1
        return out

    def _truncate(self, size: int) -> None:
        with open(self.path, "r+b") as f:
            f.truncate(size)
            os.fsync(f.fileno())

    def append(self, record: JsonObject) -> None:
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode()
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)


def _object(raw: bytes) -> JsonObject:
    obj: object = json.loads(raw)
    if not is_object(obj):
        raise json.JSONDecodeError("not an object", raw.decode(errors="replace"), 0)
    return obj


class EvalDir:
    """`--out DIR`: what is finished (by task and team), and where new results go.

    A result's patch is written (fsynced) before its line: a line in results.jsonl means its patch
    is there. predictions/<team>.jsonl are derived from both at the end of every eval (atomic
    replace), one prediction per task in each team's file."""

    def __init__(self, out: Path):
        self.out = Path(out).resolve()  # runs get it as AUTODEV_HOME from another folder
        self.out.mkdir(parents=True, exist_ok=True)
        self.results = JsonlFile(self.out / "results.jsonl")

    def runs_dir(self) -> Path:
        return self.out / "runs"

    def patch_file(self, task: str, team: str, run: int = 0) -> Path:
        return self.out / "patches" / f"{task}__{team}{f'@{run}' if run else ''}.diff"

    def finished(self) -> dict[tuple[str, ...], EvalResult]:
        """The newest result per task × team (× run, with --best-of; a re-run after a changed
        task or team appends anew)."""
        done: dict[tuple[str, ...], EvalResult] = {}
        for n, line in self.results.read():
            try:
                r = EvalResult.model_validate(line)
            except ValidationError as e:
                raise EvalFileError(
                    f"{self.results.path}:{n} is not a result ({e.errors()[0]['msg']})",
                    "remove that line (its task × team is run again), or use another --out",
                ) from None
            done[r.key] = r
        return done

    def record(self, result: EvalResult, patch: str) -> None:
        path = self.patch_file(result.task, result.team, result.run or 0)
        write_atomic(path, patch)
        self.results.append(result.dump())

    def predictions_file(self, team: str) -> Path:
        return self.out / "predictions" / f"{team}.jsonl"

    def write_predictions(self, results: list[EvalResult], teams: list[str]) -> dict[str, Path]:
        """predictions/<team>.jsonl in SWE-bench's format, one file per team: SWE-bench's harness
        keys predictions by instance, so two teams in one file would grade only the last one.
        `model_patch` is the diff from the base commit to what the run left; `model_name_or_path`
        is the team. Every team in `teams` gets its file, empty if none of its runs finished.
        With --best-of, `results` holds the picked run of each task and team only."""
        by_team: dict[str, list[str]] = {name: [] for name in teams}
        for r in results:
            patch = self.patch_file(r.task, r.team, r.run or 0)
            by_team.setdefault(r.team, []).append(
                json.dumps(
                    {
                        "instance_id": r.task,
                        "model_name_or_path": r.team,
                        "model_patch": patch.read_text() if patch.exists() else "",
                    },
                    ensure_ascii=False,
                )
            )
        paths: dict[str, Path] = {}
        for team, lines in by_team.items():
            paths[team] = self.predictions_file(team)
            write_atomic(paths[team], "".join(line + "\n" for line in lines))
        # The one mixed file an earlier autodev wrote would grade only the last team: gone.
        (self.out / "predictions.jsonl").unlink(missing_ok=True)
        return paths


def harness_command(predictions: Path, team: str) -> str:
    """SWE-bench's own harness on one team's predictions (its containers, its dataset)."""
    return (
        "python -m swebench.harness.run_evaluation --dataset_name princeton-nlp/SWE-bench_Verified "
        f"--predictions_path {shlex.quote(str(predictions))} --run_id {shlex.quote('autodev-' + team)}"
    )


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
