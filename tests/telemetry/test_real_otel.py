"""Telemetry against a real OpenTelemetry backend: Arize Phoenix (from PyPI, in its own .venv-otel)
started on 127.0.0.1 by the test, a scripted team run exporting its trace to it over OTLP/HTTP,
and the spans read back through Phoenix's REST API: names, parent-child shape, GenAI attributes,
token sums equal to `status`. Phoenix stores traces only, so the metrics go to the tests' own OTLP
receiver (OTEL_EXPORTER_OTLP_METRICS_ENDPOINT), where the cost per participant is read.

Opt-in: `make real-otel` installs Phoenix and runs this with AUTODEV_REAL_OTEL_VENV set; with
AUTODEV_REAL_OTEL_OUT set it also keeps a screenshot of the trace in Phoenix's UI (headless
chromium) and the cost table there (docs/telemetry.md shows both)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import urllib.request
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from autodev.harness.chromium import chromium_path
from tests.conftest import write_team
from tests.e2e.helpers import status_json, wait_for
from tests.e2e.otlp_receiver import Receiver

pytestmark = pytest.mark.e2e

VENV = os.environ.get("AUTODEV_REAL_OTEL_VENV", "")
if not VENV:
    pytest.skip("a real OpenTelemetry backend is opt-in: make real-otel", allow_module_level=True)

PROJECT = "autodev"

TEAM = """
[[participants]]
name = "planner"
model = "scripted"

[[participants]]
name = "builder"
model = "scripted"
write = true

[[participants]]
name = "reviewer"
model = "scripted"

[audit]
model = "scripted"

[scripted]
path = "script.toml"
"""

# What a mid-range hosted model costs (USD per token), so the cost figures are not all zero.
SCRIPT = """
[price]
input_per_token = 0.00000125
output_per_token = 0.00001

[[step]]
participant = "builder"
calls = [
  { tool = "write_file", args = { path = "hello.py", content = "print('hello')\\n" } },
  { tool = "run_command", args = { command = "git add -A && git commit -qm hello" } },
]
[[step]]
participant = "builder"
calls = [{ tool = "post", args = { kind = "work_done", text = "hello.py added", handoff = "reviewer" } }]
[[step]]
participant = "reviewer"
calls = [
  { tool = "read_file", args = { path = "hello.py" } },
  { tool = "run_command", args = { command = "git log --oneline -1" } },
]
[[step]]
participant = "reviewer"
calls = [{ tool = "post", args = { kind = "say", text = "reviewed: prints hello", handoff = "planner" } }]
[[step]]
participant = "planner"
calls = [{ tool = "post", args = { kind = "done", text = "hello.py is in" } }]
[[step]]
participant = "audit"
calls = [{ tool = "verdict", args = { accept = true, gap = "" } }]
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


class Phoenix:
    """`phoenix serve` on 127.0.0.1 (HTTP and OTLP/HTTP on one free port, gRPC on another), its
    database in a temp folder, in a process group of its own that `stop` kills whole."""

    def __init__(self, workdir: Path):
        self.port, grpc = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {
            **os.environ,
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(self.port),
            "PHOENIX_GRPC_PORT": str(grpc),
            "PHOENIX_WORKING_DIR": str(workdir),
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        self.log = (workdir / "phoenix.log").open("w")
        self.proc = subprocess.Popen(
            [str(Path(VENV) / "bin" / "phoenix"), "serve"],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.logfile = workdir / "phoenix.log"

    def up(self) -> bool:
        assert self.proc.poll() is None, "phoenix exited:\n" + self.logfile.read_text()[-4000:]
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def spans(self, project: str) -> list[dict]:
        out, cursor = [], None
        while True:
            q = f"{self.url}/v1/projects/{project}/spans?limit=1000" + (f"&cursor={cursor}" if cursor else "")
            page = get(q)
            out += page["data"]
            cursor = page.get("next_cursor")
            if not cursor:
                return out

    def stop(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(timeout=15)
                break
            except subprocess.TimeoutExpired:
                continue
        self.log.close()


@pytest.fixture
def phoenix(tmp_path):
    work = tmp_path / "phoenix"
    work.mkdir()
    p = Phoenix(work)
    try:
        wait_for("phoenix to serve", p.up, timeout=240, step_sec=0.5)
        yield p
    finally:
        p.stop()


@pytest.fixture
def metrics():
    r = Receiver()
    try:
        yield r
    finally:
        r.close()


def screenshot(url: str, out: Path) -> None:
    """The page as headless chromium renders it once its scripts have run, with every host but
    loopback unresolvable (no fonts, updates or reports fetched)."""
    chromium = chromium_path()
    assert chromium, "make real-otel takes the screenshot with chromium: apt-get install chromium"
    profile = out.parent / "chromium-profile"
    r = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
         f"--user-data-dir={profile}", "--window-size=1600,1000", "--virtual-time-budget=15000",
         f"--screenshot={out}", url],
        capture_output=True, text=True, timeout=180, start_new_session=True,
    )  # fmt: skip
    assert r.returncode == 0 and out.exists() and out.stat().st_size > 10_000, r.stderr[-3000:]


@pytest.mark.timeout(900)
def test_a_run_in_phoenix_has_the_genai_shape_and_the_status_sums(repo, autodev, phoenix, metrics):
    write_team(repo, TEAM, SCRIPT)
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.url,
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": metrics.url + "/v1/metrics",
        "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={PROJECT}",
        "OTEL_SERVICE_NAME": "autodev",
    }
    r = autodev(repo, "start", "--foreground", "--until-idle", "add hello.py", env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    st = status_json(autodev, repo)

    spans: list[dict] = []

    def arrived() -> bool:
        spans[:] = phoenix.spans(PROJECT)
        return any(s["name"].startswith("invoke_workflow") for s in spans)

    wait_for("the trace in phoenix", arrived, timeout=60, step_sec=0.5)
    out = os.environ.get("AUTODEV_REAL_OTEL_OUT")
    keep = Path(out) if out else None
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
        (keep / "spans.json").write_text(json.dumps(spans, indent=1))
    ids = [s["context"]["span_id"] for s in spans]
    assert len(ids) == len(set(ids)), "a span was stored twice"
    assert len({s["context"]["trace_id"] for s in spans}) == 1, "one trace per run"
    by_id = {s["context"]["span_id"]: s for s in spans}
    [root] = [s for s in spans if not s.get("parent_id")]
    attrs = {s["context"]["span_id"]: s["attributes"] for s in spans}
    assert root["name"] == "invoke_workflow autodev"
    assert root["attributes"]["gen_ai.operation.name"] == "invoke_workflow"
    assert root["attributes"]["gen_ai.conversation.id"] == st["run_id"]

    turns = sorted(
        (s for s in spans if s["name"].startswith("invoke_agent ")),
        key=lambda s: s["attributes"]["autodev.turn"],
    )
    names = [t["name"] for t in turns]
    assert names == ["invoke_agent builder", "invoke_agent reviewer", "invoke_agent planner"], names
    assert all(t["parent_id"] == root["context"]["span_id"] for t in turns)
    for t in turns:
        a = t["attributes"]
        assert a["gen_ai.operation.name"] == "invoke_agent"
        assert a["gen_ai.agent.name"] == t["name"].removeprefix("invoke_agent ")
        assert a["gen_ai.conversation.id"] == st["run_id"]
    builder = next(t for t in turns if t["name"] == "invoke_agent builder")
    assert builder["attributes"]["autodev.post.kind"] == "work_done"
    assert builder["attributes"]["autodev.post.handoff"] == "reviewer"
    assert builder["attributes"]["autodev.harness.credit"].startswith("commits:")

    chats = [s for s in spans if s["name"].startswith("chat ")]
    assert chats
    for c in chats:
        a = c["attributes"]
        assert by_id[c["parent_id"]]["name"].startswith("invoke_agent ")
        assert c["name"] == f"chat {a['gen_ai.request.model']}"
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.provider.name"]
        # Phoenix stores a list attribute as a JSON string or flattened to one key per item
        finish = a.get("gen_ai.response.finish_reasons", a.get("gen_ai.response.finish_reasons.0"))
        assert a["gen_ai.response.model"] and any(r in str(finish) for r in ("stop", "tool_calls")), a
        assert a["gen_ai.usage.input_tokens"] > 0 and a["gen_ai.usage.output_tokens"] >= 0
        assert a["autodev.cost_usd"] > 0

    tools = [s for s in spans if s["name"].startswith("execute_tool ")]
    assert {t["name"] for t in tools} >= {
        "execute_tool write_file",
        "execute_tool run_command",
        "execute_tool read_file",
        "execute_tool post",
    }
    for t in tools:
        a = t["attributes"]
        assert by_id[t["parent_id"]]["name"].startswith("invoke_agent ")
        assert t["name"] == f"execute_tool {a['gen_ai.tool.name']}" and a["gen_ai.tool.call.id"]
        assert a["autodev.tool.outcome"] == "ok", t
    assert [s["attributes"]["autodev.harness.audit.accept"] for s in spans if s["name"] == "audit"] == [True]

    # token sums per participant, in Phoenix, equal what `status` reports
    agent_of = {t["context"]["span_id"]: t["attributes"]["gen_ai.agent.name"] for t in turns}
    sums: dict[str, Counter] = defaultdict(Counter)
    for c in chats:
        who = agent_of[c["parent_id"]]
        sums[who]["prompt_tokens"] += attrs[c["context"]["span_id"]]["gen_ai.usage.input_tokens"]
        sums[who]["completion_tokens"] += attrs[c["context"]["span_id"]]["gen_ai.usage.output_tokens"]
    parts = {p["name"]: p for p in st["participants"]}
    for who in ("planner", "builder", "reviewer"):
        want = {k: parts[who][k] for k in ("prompt_tokens", "completion_tokens")}
        assert dict(sums[who]) == want, (who, json.dumps(parts[who]))

    # the metrics (the daemon's last collection, flushed as it stopped): tokens and cost per
    # participant, equal to the spans and to `status`
    cost = {p["attributes"]["gen_ai.agent.name"]: p["value"] for p in metrics.latest("autodev.cost")}
    tokens: dict[str, Counter] = defaultdict(Counter)
    for p in metrics.latest("gen_ai.client.token.usage"):
        tokens[p["attributes"]["gen_ai.agent.name"]][p["attributes"]["gen_ai.token.type"]] += p["value"]
    for who in ("planner", "builder", "reviewer"):
        assert tokens[who] == {"input": sums[who]["prompt_tokens"], "output": sums[who]["completion_tokens"]}
        assert cost[who] == pytest.approx(parts[who]["cost"], abs=1e-6), (who, cost, parts[who])

    if keep:
        rows = [
            "| participant | turns | input tokens | output tokens | cost (USD) |",
            "|---|---:|---:|---:|---:|",
        ]
        turns_metric = {
            p["attributes"]["gen_ai.agent.name"]: p["value"] for p in metrics.latest("autodev.run.turns")
        }
        for who in sorted(tokens):
            rows.append(
                f"| {who} | {int(turns_metric.get(who, 0))} | {int(tokens[who]['input']):,} | "
                f"{int(tokens[who]['output']):,} | {cost.get(who, 0.0):.6f} |"
            )
        (keep / "cost.md").write_text("\n".join(rows) + "\n")
        project = next(p for p in get(phoenix.url + "/v1/projects")["data"] if p["name"] == PROJECT)
        trace = root["context"]["trace_id"]
        screenshot(f"{phoenix.url}/projects/{project['id']}/traces/{trace}", keep / "trace.png")
