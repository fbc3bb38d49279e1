"""Why a run stopped: a stable code per reason, a human sentence, and the command that
continues the run. `status` shows them under "The run stopped and why"."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from autodev.errors import ProviderError

ReasonCode = Literal[
    "question",
    "gated",
    "silent",
    "talk_limit",
    "audit_limit",
    "wait_too_long",
    "user",
    "provider",
    "no_objective",
    "fault",
    "stagnation",
    "budget",
    "wait",
    "usage_limit",
    "stopped",
    "complete",
    "rebuilt",
    "rewound",
    "forked",
    "refused",
]
"""Every reason code: stable, shown by `status --json` and kept in state.json (a test keeps
`REASONS` naming each once)."""

REASONS: dict[ReasonCode, str] = {
    "question": "{who} asked you a question (see Needs you)",
    "gated": "{who} declared a gate that needs your decision",
    "silent": "{who} ended {n} turns in a row without posting",
    "talk_limit": "{n} turns passed without credited work, even after the talk limit applied",
    "audit_limit": "the audit reopened the work {n} times (maxAcceptChecks)",
    "wait_too_long": "{who}'s wait ran past maxWaitMin",
    "user": "you paused the run",
    "provider": "a model failed: {error}",
    "no_objective": "the run has no objective yet",
    "fault": "the machine refused the run: {error}",
    "stagnation": "{who}'s last three posts were identical ({kind})",
    "budget": "{text}",  # built by budget.reached(): names the cap and the spend
    "wait": "{who} is waiting: {text}",
    "usage_limit": "{text}",  # AllModelsLimited's detail: who is limited and until when
    "stopped": "you stopped the run",
    "complete": "the audit accepted the work",
    "rebuilt": "state.json was missing; the run's state was rebuilt from its logs",
    "rewound": "you rewound the run to post {seq}; the posts after it are superseded",
    "forked": "forked from run {run} at post {seq}",
    "refused": "autodev refused to go on in this repository: {error}; fix: {fix}",
}
CONTINUE: dict[ReasonCode, str] = {
    "question": 'autodev send "your answer"',
    "gated": 'autodev approve  (or: autodev deny --reason "...")',
    "no_objective": 'autodev send "the objective"',
    "fault": "fix the cause, then autodev start",
    "wait": "the run continues by itself; autodev send ends the wait",
    "usage_limit": "the run continues by itself after the reset",
    "stopped": "autodev start",
    "complete": 'autodev send "..." to continue with more work',
    "rebuilt": "autodev start",
    "rewound": "autodev resume",
    "forked": "autodev start",
    "refused": "the fix above, then autodev resume (or autodev stop and autodev start)",
}
# Where no daemon runs, what continues differs from the line above: `start` is the whole of it.
NO_DAEMON: dict[ReasonCode, str] = {
    "rewound": "autodev start",
    "refused": "the fix above, then autodev start",
}


MAX_REASON_CHARS = 2000  # a reason is one status line: a provider's or a participant's text is cut


def reason(code: ReasonCode, **kw: object) -> dict[str, str]:
    text = REASONS[code].format(**kw)
    if len(text) > MAX_REASON_CHARS:
        text = text[: MAX_REASON_CHARS - 1] + "…"
    return {
        "code": code,
        "text": text,
        "continue": CONTINUE.get(code, 'autodev resume  (or autodev send "...")'),
    }


def provider(err: ProviderError) -> dict[str, str]:
    """A provider failure's pause reason: its sentence names the participant and the model, and
    carries the fix (the raw provider text goes to events.jsonl, not here)."""
    fix = err.fix
    return reason("provider", error=f"{err.message}; fix: {fix}" if fix else err.message)


def continue_line(r: Mapping[str, object] | None, daemon_running: bool) -> str:
    """The command that continues the run from reason `r`. Actions that need a daemon are
    queued when none runs and applied by `autodev start`, so without a daemon the line starts
    with it (either order works: a queued action waits in the inbox or the control queue)."""
    cont = str((r or {}).get("continue") or "")
    if daemon_running or not cont:
        return cont
    code = (r or {}).get("code")
    for known, line in NO_DAEMON.items():
        if code == known:
            return line
    if "autodev start" in cont:  # it starts the daemon itself ("fix the cause, then autodev start")
        return cont
    if "by itself" in cont:  # a usage-limit wait: the daemon continues after the reset
        return f"autodev start ({cont})"
    return f"autodev start, then {cont}"
