"""Secrets never reach a log, the thread or an event, and never reach a participant's command."""

from tests.conftest import run_dir, thread_of, write_team
from tests.e2e.helpers import BUILDER

SECRET = "sk-test-0123456789abcdef"

SCRIPT = f"""
[[step]]
participant = "builder"
calls = [
  {{ tool = "run_command", args = {{ command = "echo key=[$DEMO_API_KEY]" }} }},
  {{ tool = "write_file", args = {{ path = "notes.txt", content = "pasted {SECRET} by mistake" }} }},
  {{ tool = "read_file", args = {{ path = "notes.txt" }} }},
]
[[step]]
participant = "builder"
calls = [{{ tool = "post", args = {{ kind = "done", text = "the key is {SECRET}" }} }}]
[[step]]
participant = "audit"
calls = [{{ tool = "verdict", args = {{ accept = true, gap = "" }} }}]
"""


def test_secrets_are_redacted_everywhere_we_write(repo, autodev):
    write_team(repo, BUILDER, SCRIPT)
    r = autodev(
        repo,
        "start",
        "--foreground",
        "--until-idle",
        f"objective mentioning {SECRET}",
        env={"DEMO_API_KEY": SECRET},
    )
    assert r.returncode == 0, r.stdout + r.stderr
    d = run_dir(repo)
    for name in ("thread.jsonl", "events.jsonl", "harness.jsonl", "state.json"):
        text = (d / name).read_text()
        assert SECRET not in text, f"the secret reached {name}"
    assert "[redacted]" in (d / "thread.jsonl").read_text()
    # The participant's command ran without the key in its environment.
    harness = (d / "harness.jsonl").read_text()
    assert "key=[]" in harness
    assert thread_of(repo)[1]["text"] == "the key is [redacted]"
