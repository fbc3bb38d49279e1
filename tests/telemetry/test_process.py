"""The daemon's exporter process (telemetry.process and telemetry.worker), real: the worker started
as the daemon starts it, a real OTLP/HTTP receiver (tests/e2e/otlp_receiver.py), real signals.
The spans leave from another process (issue 33: not the daemon's GIL), as `trace export` derives
them; its death, a full pipe and its daemon's kill -9 are each said or handled."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from autodev.config.telemetry import TelemetryConfig
from autodev.records import check_event, check_harness
from autodev.store.journal import Journal
from autodev.store.paths import RunPaths
from autodev.telemetry import worker as worker_module
from autodev.telemetry.export import export_run
from autodev.telemetry.process import Exporter
from autodev.telemetry.settings import Telemetry, resolve
from tests.e2e.helpers import wait_for
from tests.e2e.otlp_receiver import Receiver
from tests.telemetry.test_export import sender, write_records, write_run
from tests.telemetry.test_spans import RUN

pytestmark = pytest.mark.e2e  # the exporter's own process: not in `make test-fast`

ROOT = Path(__file__).resolve().parents[2]
KEY = "s3cret-collector-key-0123456789"


def settings(url: str, capture: bool = False) -> Telemetry:
    cfg = resolve(TelemetryConfig(endpoint=url, export_timeout_sec=2, capture_content=capture), env={})
    assert cfg is not None
    return cfg


def nice(pid: int) -> int:
    """The process's nice value (field 19 of /proc/<pid>/stat)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def gone(pid: int) -> bool:
    """No such process, or a zombie no one reaped yet."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def spans_derived(paths: RunPaths, capture: bool = False) -> list[tuple]:
    """The turn spans `autodev trace export` derives from the logs (the root goes out only with
    a complete run)."""
    read = InMemorySpanExporter()
    export_run(sender(paths, read, url="http://127.0.0.1:9999", capture_content=capture)[0], RUN, None)
    return sorted(
        (
            sp.name,
            f"{sp.context.span_id:016x}",
            f"{sp.parent.span_id:016x}",
            sp.start_time,
            sp.end_time,
            json.dumps(dict(sp.attributes or {}), sort_keys=True),
            [e.name for e in sp.events],
        )
        for sp in read.get_finished_spans()
        if sp.parent is not None
    )


def spans_received(receiver: Receiver) -> list[tuple]:
    return sorted(
        (
            s["name"],
            s["span_id"],
            s["parent"],
            s["start"],
            s["end"],
            json.dumps(s["attributes"], sort_keys=True),
            s["events"],
        )
        for s in receiver.spans
    )


def test_a_finished_turn_leaves_from_the_exporters_process_as_trace_export_derives_it(tmp_path, receiver):
    paths = RunPaths(tmp_path / "repo")
    write_run(paths)
    warnings: list[str] = []
    secrets = {"OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer%20{KEY}"}
    ex = Exporter(settings(receiver.url), paths, RUN, secrets, lambda: [KEY], warnings.append)
    worker = ex.proc.pid
    assert (
        worker != os.getpid()
        and Path(f"/proc/{worker}/status").read_text().count(f"PPid:\t{os.getpid()}") == 1
    )
    # The collector's key reaches the worker over the pipe only: not its arguments nor environment.
    assert KEY not in Path(f"/proc/{worker}/cmdline").read_text()
    assert KEY.encode() not in Path(f"/proc/{worker}/environ").read_bytes()
    ex.turn_done(1)
    # It yields the CPU to the run: niced below the daemon (once its interpreter has begun).
    wait_for("the exporter to renice itself", lambda: nice(worker) != nice(os.getpid()), timeout=10)
    assert nice(worker) == nice(os.getpid()) + worker_module.NICE
    ex.close(5)
    assert ex.proc.returncode == 0 and warnings == []
    assert len(receiver.spans) == 7 and spans_received(receiver) == spans_derived(paths)
    assert all(h.get("authorization") == f"Bearer {KEY}" for h in receiver.headers) and receiver.headers


@pytest.mark.parametrize(("crash", "capture"), [(False, False), (True, False), (False, True)])
def test_the_lines_handed_over_as_written_make_the_turn_the_logs_hold(tmp_path, receiver, crash, capture):
    """The daemon hands its exporter each line as its journals write it (no reading back): the
    spans are those `trace export` derives from the files, and they go out with the files gone.
    With content capture on too: the messages exported are the ones the log holds."""
    paths = RunPaths(tmp_path / "repo")
    paths.run_dir.mkdir(parents=True)
    warnings: list[str] = []
    ex = Exporter(settings(receiver.url, capture), paths, RUN, {}, list, warnings.append)
    with (
        Journal(paths.harness_log, schema=check_harness) as h,
        Journal(paths.events, idempotent=False, schema=check_event) as e,
    ):
        ex.watch(h, e)
        write_records(h, e, crash)
    kept = tmp_path / "kept"
    kept.mkdir()
    for f in (paths.harness_log, paths.events):
        f.rename(kept / f.name)
    ex.turn_done(1)
    ex.close(5)
    assert warnings == [] and len(receiver.spans) == 7  # the turn and its children
    for f in (paths.harness_log, paths.events):
        (kept / f.name).rename(f)
    assert spans_received(receiver) == spans_derived(paths, capture)
    captured = [s for s in receiver.spans if "gen_ai.input.messages" in s["attributes"]]
    assert bool(captured) == capture


@pytest.mark.parametrize("learned", [False, True])
def test_a_secret_value_the_daemon_learns_after_the_exporter_started_is_masked_in_its_spans(
    tmp_path, receiver, learned
):
    """The daemon's redactor learns values mid-run (a team edit naming a new key); the exporter,
    started with the earlier ones, is taught them at the next turn's end, before that turn's
    spans leave. Here the lines handed over are unmasked (as no daemon's would be), so the
    exporter's own masking is what is seen."""
    secret = "error: refused"  # a tool's result in the turn, exported with content capture on
    paths = RunPaths(tmp_path / "repo")
    paths.run_dir.mkdir(parents=True)
    values: list[str] = []
    ex = Exporter(settings(receiver.url, capture=True), paths, RUN, {}, lambda: list(values), print)
    with (
        Journal(paths.harness_log, schema=check_harness) as h,
        Journal(paths.events, idempotent=False, schema=check_event) as e,
    ):
        ex.watch(h, e)
        write_records(h, e)
    if learned:
        values.append(secret)
    ex.turn_done(1)
    ex.close(5)
    sent = json.dumps([s["attributes"] for s in receiver.spans])
    assert len(receiver.spans) == 7
    assert (secret in sent, "[redacted]" in sent) == ((False, True) if learned else (True, False))


def test_an_exporter_that_dies_is_said_once_and_nothing_waits_on_it(tmp_path, receiver):
    paths = RunPaths(tmp_path / "repo")
    write_run(paths)
    warnings: list[str] = []
    ex = Exporter(settings(receiver.url), paths, RUN, {}, list, warnings.append)
    os.kill(ex.proc.pid, signal.SIGKILL)
    wait_for("the daemon to hear of it", lambda: len(warnings) == 1, timeout=30)
    assert warnings[0].startswith("telemetry: the exporter process ended (exit -9)")
    assert "autodev trace export" in warnings[0]
    began = time.monotonic()
    for n in range(1, 50):
        ex.turn_done(n)  # a pipe with no reader: refused at once, and not said again
    ex.close(1)
    assert time.monotonic() - began < 1 and len(warnings) == 1 and receiver.spans == []


def test_an_exporter_that_cannot_keep_up_drops_turns_with_one_warning(tmp_path, receiver):
    """A stopped exporter (as one stuck on a collector would be): the pipe fills, then the lines
    waiting in memory pass `BEHIND_BYTES` and are dropped, said once; the daemon never waits,
    and the turns stay in the logs."""
    paths = RunPaths(tmp_path / "repo")
    paths.run_dir.mkdir(parents=True)
    warnings: list[str] = []
    ex = Exporter(settings(receiver.url), paths, RUN, {}, list, warnings.append)
    os.kill(ex.proc.pid, signal.SIGSTOP)
    big = "x" * 100_000
    try:
        with Journal(paths.harness_log) as h, Journal(paths.events, idempotent=False) as e:
            ex.watch(h, e)
            began = time.monotonic()
            for turn in (1, 2, 3, 4):
                for n in range(40):
                    e.append(
                        {
                            "type": "warning",
                            "run": RUN,
                            "ts": f"2026-12-07T00:00:{n:02d}.000Z",
                            "message": big,
                        }
                    )
                ex.turn_done(turn)
            assert time.monotonic() - began < 5
        assert paths.events.stat().st_size > 4 * 40 * 100_000  # the logs have every line
        [said] = warnings
        assert said.startswith("telemetry: the exporter process could not take turn 3 and the ones before it")
        assert "it is behind" in said and "autodev trace export" in said
    finally:
        os.kill(ex.proc.pid, signal.SIGKILL)
        os.kill(ex.proc.pid, signal.SIGCONT)
    wait_for("its end to be heard", lambda: len(warnings) == 2, timeout=30)
    assert warnings[1].startswith("telemetry: the exporter process ended (exit -9)")
    ex.close(1)


CHILD = """
import sys, time
from pathlib import Path
from autodev.store.journal import Journal
from autodev.store.paths import RunPaths
from autodev.telemetry.process import Exporter
from autodev.telemetry.settings import Telemetry
cfg = Telemetry(traces_url=sys.argv[2] + "/v1/traces", metrics_url=sys.argv[2] + "/v1/metrics")
ex = Exporter(cfg, RunPaths(Path(sys.argv[1])), "r", {}, list, print)
print(ex.proc.pid, flush=True)
time.sleep(600)
"""


def test_the_exporter_dies_with_its_daemon_killed_with_9(tmp_path, receiver):
    """Killed with its daemon, so an old exporter never sends beside the next daemon's catch-up."""
    paths = RunPaths(tmp_path / "repo")
    write_run(paths)
    daemon = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(paths.repo), receiver.url],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert daemon.stdout is not None
        worker = int(daemon.stdout.readline())
        assert not gone(worker)
        os.kill(daemon.pid, signal.SIGKILL)  # the daemon alone, not its group
        daemon.wait(10)
        wait_for("the exporter to die with it", lambda: gone(worker), timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):  # nothing left of the group: as it should be
            os.killpg(daemon.pid, signal.SIGKILL)
        daemon.wait(10)


@pytest.mark.parametrize(
    "first",
    [
        "not json\n",
        '{"run": "r"}\n',
        '{"run": "r", "repo": "/x", "cfg": [], "secrets": {}, "redact": []}\n',
        "",
    ],
)
def test_an_exporter_started_without_its_settings_says_so_and_exits(first):
    """The worker's first line is the daemon's; anything else is one warning naming what was
    wrong, and an exit, never a traceback."""
    import io

    from autodev.telemetry import worker

    out = io.StringIO()
    assert worker.main(io.StringIO(first), out) == 2
    [line] = out.getvalue().splitlines()
    said = json.loads(line)["warn"]
    assert said.startswith("telemetry: the exporter process was started without its settings (")
    assert "`autodev trace export` sends its spans" in said
