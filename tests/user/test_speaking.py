"""Who speaks, on a run nobody runs: status and the panel never say "speaking now" without a
daemon; they say whose turn was open and that it continues on the next start."""

from __future__ import annotations

from autodev.panel import views
from autodev.records.state import RunState
from autodev.user import status
from tests.security.test_display import _status_data


def shown(daemon_pid: int | None, capsys) -> tuple[str, str]:
    d = status.Status.model_validate({**_status_data(), "state": "stopped", "speaking": "builder",
                                      "daemon_pid": daemon_pid, "needs_you": []})  # fmt: skip
    status.render(d)
    return capsys.readouterr().out, views.header(d, RunState(), daemon_pid).plain


def test_a_stopped_run_has_nobody_speaking_now(capsys):
    out, panel = shown(None, capsys)
    for text in (out, panel):
        assert "speaking now" not in text
        assert "builder's turn was open when the run stopped: it continues on the next start" in text
    out, panel = shown(4242, capsys)
    assert "speaking now: builder" in out and "speaking now: builder" in panel
