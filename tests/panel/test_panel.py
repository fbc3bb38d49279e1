"""The panel driven headless by Textual's Pilot on real runs: a real detached daemon (the
`autodev start` subprocess) serves scripted participants, the panel reads its run folder, and
each key lands in the inbox or state.json, where the daemon acts on it."""

from __future__ import annotations

import asyncio
import json
import os
import time

import pytest
from textual.widgets import Input

from autodev.panel.app import Confirm, PanelApp, Prompt
from autodev.store.paths import RunPaths
from tests.conftest import shape, thread_of, write_team
from tests.e2e.helpers import (
    GATE_SCRIPT,
    PAIR,
    QUESTION_SCRIPT,
    SLOW_SCRIPT,
    events_of,
    requests_of,
    start_detached,
    state_of,
    wait_for,
)

SIZE = (160, 48)

NOTICE_SCRIPT = """
[[step]]
participant = "alice"
calls = [
  { tool = "tell_user", args = { text = "I need an API token for the deploy", hold = "commands" } },
  { tool = "post", args = { kind = "say", text = "see my notice", handoff = "user" } },
]
[[step]]
participant = "alice"
calls = [{ tool = "post", args = { kind = "done", text = "deployed with the token" } }]
[[step]]
participant = "audit"
calls = [{ tool = "verdict", args = { accept = true, gap = "" } }]
"""


def drive(repo, scenario, timeout: float = 60) -> None:
    """Run `scenario(app, pilot)` against a headless panel on `repo`'s run."""

    async def main():
        app = PanelApp(RunPaths(repo))
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, "the panel to load", app.loaded.is_set)
            await asyncio.wait_for(scenario(app, pilot), timeout)

    asyncio.run(main())


async def until(pilot, what: str, check, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        await pilot.pause(0.05)
    app = pilot.app
    raise AssertionError(
        f"timed out after {timeout}s waiting for {what}\nstate: "
        f"{app.status.state}\nfeed:\n{app.feed_text()[-3000:]}"
    )


async def type_into_prompt(pilot, text: str) -> None:
    await until(pilot, "the prompt", lambda: isinstance(pilot.app.screen, Prompt))
    pilot.app.screen.query_one(Input).value = text
    await pilot.press("enter")
    await until(pilot, "the prompt to close", lambda: not isinstance(pilot.app.screen, Prompt))


def header(app) -> str:
    return str(app.query_one("#header").render())


def needs_text(app) -> str:
    ol = app.query_one("#needs")
    return "\n".join(str(ol.get_option_at_index(i).prompt) for i in range(ol.option_count))


def inbox_files(repo) -> list[dict]:
    d = RunPaths(repo).inbox
    return [json.loads(p.read_text()) for p in sorted(d.glob("*.json"))] if d.exists() else []


def test_feed_follows_a_live_run_and_send_answers_the_question(repo, autodev):
    write_team(repo, PAIR, QUESTION_SCRIPT)

    async def scenario(app, pilot):
        # No daemon yet: the panel opens anyway and says so.
        assert "no daemon running" in header(app)
        start_detached(autodev, repo, "pick a colour")
        await until(pilot, "the question in the Feed", lambda: "User: red or blue?" in app.feed_text())
        await until(pilot, "awaiting_user in the header", lambda: "awaiting_user" in header(app))
        feed = app.feed_text()
        assert "alice say → bob" in feed and "bob, what colour?" in feed
        assert "turn 1 started: alice" in feed
        assert "daemon pid" in header(app) and "pick a colour" in header(app)
        assert "question from bob" in needs_text(app)

        await pilot.press("s")
        await type_into_prompt(pilot, "blue, please")
        await until(pilot, "the answer on the thread", lambda: "blue, please" in app.feed_text())
        await until(pilot, "the audit's acceptance", lambda: "audit accepted" in app.feed_text())
        await until(pilot, "complete", lambda: "complete" in header(app))
        assert "nothing needs you" in needs_text(app)

    drive(repo, scenario)
    assert shape(thread_of(repo))[3:] == [
        ("user", "say", None, None),
        ("bob", "done", None, None),
        ("audit", "say", None, None),
    ]
    assert thread_of(repo)[3]["text"] == "blue, please"


def test_approve_a_gate_and_the_run_continues(repo, autodev):
    write_team(repo, PAIR, GATE_SCRIPT, 'gateMode = "gated"\n')

    async def scenario(app, pilot):
        start_detached(autodev, repo, "push it")
        await until(pilot, "gated", lambda: state_of(repo).get("state") == "gated")
        await until(pilot, "the gate under Needs you", lambda: "gate 2 from alice" in needs_text(app))
        assert "needs your decision: git push origin main" in app.feed_text()
        await pilot.press("a")
        await until(pilot, "complete", lambda: "complete" in header(app))
        assert "Gate 2 by alice approved by the user" in app.feed_text()
        assert "pushed after the gate" in app.feed_text()

    drive(repo, scenario)
    notes = [p["gate"] for p in thread_of(repo) if p.get("gate")]
    assert [(g["id"], g["decision"], g["by"]) for g in notes] == [("2", "approved", "the user")]
    assert [p["from"] for p in thread_of(repo)][-3:] == ["system", "alice", "audit"]


@pytest.mark.full
def test_deny_a_gate_with_a_reason(repo, autodev):
    write_team(repo, PAIR, GATE_SCRIPT, 'gateMode = "gated"\n')

    async def scenario(app, pilot):
        start_detached(autodev, repo, "push it")
        await until(pilot, "the gate under Needs you", lambda: "gate 2 from alice" in needs_text(app))
        await pilot.press("d")
        await type_into_prompt(pilot, "not on main")
        await until(
            pilot, "the denial", lambda: "Gate 2 by alice denied by the user: not on main" in app.feed_text()
        )

    drive(repo, scenario)
    note = [p for p in thread_of(repo) if p["from"] == "system" and p.get("gate")][0]
    assert note["gate"]["decision"] == "denied" and note["text"].endswith(": not on main")


@pytest.mark.full
def test_notice_hold_release_and_answer_reach_the_daemon(repo, autodev):
    write_team(repo, PAIR, NOTICE_SCRIPT)

    def notice():
        return (state_of(repo).get("notices") or {}).get("1") or {}

    async def scenario(app, pilot):
        start_detached(autodev, repo, "deploy")
        await until(pilot, "the notice under Needs you", lambda: "notice 1 from alice" in needs_text(app))
        assert "holds commands" in needs_text(app)
        assert "I need an API token" in app.feed_text()

        await pilot.press("h")
        await until(pilot, "the hold pinned", lambda: notice().get("pinned") is True)
        await until(pilot, "pinned shown", lambda: "(pinned)" in needs_text(app))
        await pilot.press("l")
        await until(pilot, "the hold released", lambda: notice().get("released") == "the user")
        assert notice()["hold"] is None

        await pilot.press("n")
        await type_into_prompt(pilot, "the token is in the vault")
        await until(
            pilot, "the answer recorded", lambda: notice().get("answer") == "the token is in the vault"
        )
        await pilot.press("s")
        await type_into_prompt(pilot, "go ahead")
        await until(pilot, "complete", lambda: "complete" in header(app))

    drive(repo, scenario)
    answered = [p for p in thread_of(repo) if (p.get("notice") or {}).get("answered")]
    assert [p["text"] for p in answered] == [
        "the user answered notice 1 from alice: the token is in the vault"
    ]
    # alice's next turn carried the answer: the daemon acted on it.
    last = [q for q in requests_of(repo) if q["participant"] == "alice"][-1]
    prompt = json.dumps(last["body"]["messages"])
    assert "the token is in the vault" in prompt


@pytest.mark.full
def test_pause_resume_and_stop_from_the_keyboard(repo, autodev):
    write_team(repo, PAIR, SLOW_SCRIPT)

    async def scenario(app, pilot):
        start_detached(autodev, repo, "be slow")
        await until(pilot, "alice's command", lambda: "alice: run_command" in app.feed_text())
        await pilot.press("p")
        await until(pilot, "paused", lambda: state_of(repo).get("state") == "paused")
        await until(
            pilot,
            "the stop reason shown",
            lambda: "The run stopped and why" in needs_text(app) and "you paused" in needs_text(app),
        )
        await pilot.press("r")
        await until(pilot, "the question after resume", lambda: "Ready?" in app.feed_text())
        await until(pilot, "awaiting_user", lambda: "awaiting_user" in header(app))
        await pilot.press("x")
        await until(pilot, "the confirmation", lambda: isinstance(app.screen, Confirm))
        await pilot.press("y")
        await until(pilot, "the daemon gone", lambda: "no daemon running" in header(app), timeout=20)
        assert "stopped" in header(app)

    drive(repo, scenario)
    assert [e["action"] for e in events_of(repo) if e["type"] == "control"] == ["pause", "resume", "stop"]
    assert inbox_files(repo) == []


def test_panel_actions_without_a_daemon_wait_in_the_inbox(repo, autodev):
    """With no daemon the panel still opens and queues what you do, like the CLI does."""
    write_team(repo, PAIR, QUESTION_SCRIPT)

    async def scenario(app, pilot):
        assert "no daemon running" in header(app)
        await pilot.press("s")
        await type_into_prompt(pilot, "the objective")
        await pilot.press("a")  # no gate is open: nothing is dropped, the panel says so
        await pilot.press("p")
        await until(
            pilot,
            "the pause queued",
            lambda: [c["action"] for c in state_of(repo).get("controls", [])] == ["pause"],
        )

    drive(repo, scenario)
    assert [(m["kind"], m.get("text")) for m in inbox_files(repo)] == [("send", "the objective")]
    # The queued message is the run's objective once a daemon starts.
    r = autodev(repo, "start", "--foreground", "--until-idle")
    assert r.returncode == 3, r.stdout + r.stderr
    assert thread_of(repo)[0]["text"] == "the objective"
    wait_for("nothing left in the inbox", lambda: inbox_files(repo) == [])


def test_the_clock_tick_waits_while_a_prompt_is_open(repo):
    """The 1 s tick reloads when a daemon comes or goes. With a prompt open, the panel's widgets
    are not on the active screen: the tick must wait for the prompt to close, not crash."""
    from autodev.store.lock import DaemonLock

    write_team(repo, PAIR)
    lock = DaemonLock(RunPaths(repo).lock)

    async def scenario(app, pilot):
        assert "no daemon running" in header(app)
        await pilot.press("s")
        await until(pilot, "the prompt", lambda: isinstance(app.screen, Prompt))
        lock.acquire()  # a daemon starts while the prompt is open
        app._tick()
        assert isinstance(app.screen, Prompt) and app.daemon_pid is None  # nothing read yet
        await pilot.press("escape")
        await until(pilot, "the prompt to close", lambda: not isinstance(app.screen, Prompt))
        app._tick()
        assert app.daemon_pid == os.getpid() and "no daemon running" not in header(app)

    try:
        drive(repo, scenario)
    finally:
        lock.release()


def test_a_tick_that_lands_while_the_panel_closes_does_nothing(repo):
    """Textual removes the screens before it stops the app's timers, so under load the 1 s tick
    (or a reload the watcher queued) can run on a panel whose widgets are gone. It must return,
    not crash the closing app (a CI run failed on `NoMatches '#header'` that way)."""
    write_team(repo, PAIR)
    closed: list[PanelApp] = []

    async def main():
        app = PanelApp(RunPaths(repo))
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, "the panel to load", app.loaded.is_set)
            closed.append(app)

    asyncio.run(main())
    app = closed[0]
    assert not app.is_running and not app.screen_stack  # closed: no screen holds #header any more
    app._tick()
    app.reload()
    assert app.daemon_pid is None


def test_expand_key_unfolds_long_posts(repo):
    from autodev.user.events_view import FOLD_CHARS

    write_team(repo, PAIR)
    paths = RunPaths(repo)
    paths.ensure()
    long = "word " * (FOLD_CHARS // 2)
    paths.events.write_text(
        json.dumps(
            {
                "type": "post",
                "seq": 1,
                "from": "user",
                "kind": "say",
                "text": long + "THE END",
                "ts": "2026-11-30T00:00:00.000Z",
            }
        )
        + "\n"
    )

    async def scenario(app, pilot):
        await until(pilot, "the folded post", lambda: "[folded: e expands]" in app.feed_text())
        assert "THE END" not in app.feed_text()
        await pilot.press("e")
        await until(pilot, "the full post", lambda: "THE END" in app.feed_text())
        assert "[folded" not in app.feed_text()

    drive(repo, scenario)


FAULTS_TEAM = PAIR.replace(
    'name = "alice"\nmodel = "scripted"', 'name = "alice"\nmodel = "scripted"\nfailover = ["scripted:backup"]'
)

FAULTS_SCRIPT = """
[[step]]
participant = "alice"
error = 429
retry_after = 30
[[step]]
participant = "alice"
error = 503
[[step]]
participant = "alice"
calls = [{ tool = "post", args = { kind = "wait", text = "waiting for CI" } }]
[[step]]
participant = "alice"
calls = [{ tool = "post", args = { kind = "done", text = "CI is green" } }]
[[step]]
participant = "audit"
calls = [{ tool = "verdict", args = { accept = true, gap = "" } }]
"""


@pytest.mark.full
def test_feed_shows_failover_retry_and_wait_lines(repo, autodev):
    """A usage limit, a server error and a wait, from a real run, as the Feed shows them."""
    write_team(
        repo, FAULTS_TEAM, FAULTS_SCRIPT, "retryBackoffSec = 0.05\nwaitFirstSec = 0.2\nwaitCapSec = 0.4\n"
    )
    r = autodev(repo, "start", "--foreground", "--until-idle", "wait for CI")
    assert r.returncode == 0, r.stdout + r.stderr

    async def scenario(app, pilot):
        await until(pilot, "the audit's acceptance", lambda: "audit accepted" in app.feed_text())
        feed = app.feed_text()
        assert "alice: scripted hit a usage limit → scripted:backup" in feed
        # The attempt count is per request: the usage-limited attempt was the first.
        assert "alice: retry 2 in 0.1s" in feed
        assert "alice waits 0.2s; next check at" in feed

    drive(repo, scenario)
