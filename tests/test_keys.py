"""The key store: keys cross to a child over a pipe, never its environment, and reach litellm
per request as arguments."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from autodev.guard import keys
from autodev.harness import providers

KEY = "sk-test-keystore-0123456789"
CHILD = """
import json, os
from autodev.guard import keys
got = keys.receive()
print(json.dumps({
    "received": got,
    "store": keys.all_keys(),
    "in_environ": "DEMO_API_KEY" in os.environ or "db_token" in os.environ,
    "in_proc": b"sk-test-keystore" in open("/proc/self/environ", "rb").read(),
    "plain": os.environ.get("PLAIN_SETTING"),
}))
"""


@pytest.fixture(autouse=True)
def fresh_store():
    keys.set_store(None)
    yield
    keys.set_store(None)


def test_keys_cross_to_a_child_over_a_pipe_not_its_environment():
    base = {**os.environ, "DEMO_API_KEY": KEY, "db_token": "db-0123456789", "PLAIN_SETTING": "kept"}
    env, fd = keys.handover(["MY_CUSTOM_CRED"], base)
    try:
        out = subprocess.run(
            [sys.executable, "-c", CHILD], env=env, pass_fds=(fd,), capture_output=True, text=True, check=True
        ).stdout
    finally:
        os.close(fd)
    got = json.loads(out)
    assert got["received"] is True
    assert got["store"]["DEMO_API_KEY"] == KEY and got["store"]["db_token"] == "db-0123456789"
    assert got["in_environ"] is False and got["in_proc"] is False
    assert got["plain"] == "kept"


def test_a_process_that_received_nothing_reads_its_environment(monkeypatch):
    monkeypatch.setenv("DEMO_API_KEY", KEY)
    monkeypatch.delenv(keys.FD_ENV, raising=False)
    assert keys.receive() is False and not keys.received()
    assert keys.get("DEMO_API_KEY") == KEY and KEY in keys.values()


def test_targets_get_their_keys_from_the_store_not_the_environment(monkeypatch):
    for n in ("OPENAI_API_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "DEMO_API_KEY"):
        monkeypatch.delenv(n, raising=False)
    keys.set_store(
        {
            "OPENAI_API_KEY": "sk-openai-0123456789",
            "DEMO_API_KEY": KEY,
            "AWS_ACCESS_KEY_ID": "AKIA0123456789",
            "AWS_SECRET_ACCESS_KEY": "aws-secret-0123456789",
        }
    )

    def target(model, **kw):
        args = dict(effort=None, api_base=None, api_key_env=None, scripted_url=None)
        args.update(kw)
        return providers.targets_for("builder", model, [], **args)[0].kwargs

    assert target("openai/gpt-5")["api_key"] == "sk-openai-0123456789"
    assert target("openai/gpt-5", api_key_env="DEMO_API_KEY")["api_key"] == KEY
    bedrock = target("bedrock/anthropic.claude-3")
    assert bedrock["aws_access_key_id"] == "AKIA0123456789"
    assert bedrock["aws_secret_access_key"] == "aws-secret-0123456789"
    # api_base without api_key_env: no real key (a local endpoint), not the provider's from the store
    assert target("openai/local", api_base="http://127.0.0.1:9")["api_key"] != "sk-openai-0123456789"


def test_env_for_passes_exactly_the_named_secrets(monkeypatch):
    monkeypatch.setenv("PLAIN_SETTING", "kept")
    keys.set_store({"GITHUB_TOKEN": "ghp-0123456789", "OPENAI_API_KEY": "sk-0123456789"})
    env = keys.env_for(
        ["GITHUB_TOKEN"], base={"PATH": "/bin", "OPENAI_API_KEY": "x", "PLAIN_SETTING": "kept"}
    )
    assert env == {"PATH": "/bin", "PLAIN_SETTING": "kept", "GITHUB_TOKEN": "ghp-0123456789"}
