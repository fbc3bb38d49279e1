"""The audit of a `done` post, as the daemon calls it: the one effect that calls a model.

`effects.post_change` gets `audit` as an argument; this is the daemon's: it shows the run as
`auditing`, asks the stateless audit (`audit.py`) with the audit model, adds its usage to the
run's figures, and returns the verdict's change (complete, reopened, or paused at the audit
limit or on a provider error, with `audit_pending` so that resuming audits the same post).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from autodev.config import RunConfig, Team
from autodev.daemon.effects import Change, Note, add_models
from autodev.daemon.handles import Run, Scripted
from autodev.errors import ProviderError
from autodev.guard.sandbox import Room
from autodev.harness import providers
from autodev.records.base import State
from autodev.records.events import AuditEvent, AuditStartedEvent, AuditStoppedEvent, ErrorEvent, RetryEvent
from autodev.records.post import Post
from autodev.records.state import ModelUsage, RunState, Usage
from autodev.rules import reasons
from autodev.rules.reasons import reason

if TYPE_CHECKING:
    from autodev.harness.audit import Verdict


def audit(
    post: Post,
    st: RunState,
    *,
    run: Run,
    config: RunConfig,
    team: Team,
    secret_env: list[str],
    room: Room,
    scripted: Scripted,
    model=None,
    set_state: Callable[[State, dict | None], None],
    stopping: Callable[[], bool],
) -> Change:
    from autodev.harness.audit import AuditStopped
    from autodev.harness.audit import audit as ask

    set_state("auditing", None)
    a = team.audit_model()
    targets = providers.targets_for(
        "audit",
        a.model,
        [],
        effort=a.effort,
        api_base=a.api_base,
        api_key_env=a.api_key_env,
        scripted_url=scripted.url,
        scripted_price=scripted.price,
        configured_output=config.max_output_tokens,
    )
    n = st.audits + 1
    audit_id = f"{run.run_id}:audit{post.seq}"
    run.events.emit(AuditStartedEvent(seq=post.seq, n=n))
    try:
        v = ask(
            repo=run.paths.repo,
            objective="\n\n".join(st.user_messages),
            done_post=post,
            base=st.base_head,
            check=config.audit_check,
            check_timeout=config.command_timeout_sec,
            targets=targets,
            audit_id=audit_id,
            diff_chars=config.audit_diff_chars,
            overrides=run.overrides,
            secret_env=secret_env,
            room=room,
            max_retries=config.max_retries,
            backoff_sec=config.retry_backoff_sec,
            on_retry=lambda attempt, delay, error: run.events.emit(
                RetryEvent(
                    participant="audit", model=a.model, attempt=attempt, delay=delay, error=error[:300]
                )
            ),
            stopping=stopping,
            model=model,
        )
    except AuditStopped:
        # The stop applies at the turn boundary that follows; `start` audits the post again.
        run.events.emit(AuditStoppedEvent(seq=post.seq, n=n))
        return Change({"state": "running", "reason": None, "audit_pending": post.seq})
    except ProviderError as e:
        run.events.emit(ErrorEvent(participant="audit", message=str(e), detail=getattr(e, "detail", None)))
        # The done post stays unaudited: resuming the run audits it before any turn.
        return Change({"state": "paused", "reason": reasons.provider(e), "audit_pending": post.seq})
    run.state.update(lambda s: used(s, v, a.model).but(audit_pending=None))
    u = v.used
    run.events.emit(
        AuditEvent(
            seq=post.seq, accept=v.accept, gap=v.gap[:1000], by=v.by, model=a.model,
            prompt_tokens=u.prompt_tokens, completion_tokens=u.completion_tokens, cost=round(u.cost, 9),
        )
    )  # fmt: skip
    if v.accept:
        verdict = Note(
            "audit", f"Accepted. {v.gap}".strip(), extra={"id": f"{audit_id}:verdict", "verdict": "accept"}
        )
        return Change(
            {
                "state": "complete",
                "audits": n,
                "reason": reason("complete"),
            },
            [verdict],
        )
    verdict = Note(
        "audit",
        f"Reopened: {v.gap}",
        post.from_,
        extra={"id": f"{audit_id}:verdict", "verdict": "reopen", "by": v.by},
    )
    if n >= config.max_accept_checks:
        return Change({"state": "paused", "reason": reason("audit_limit", n=n), "audits": n}, [verdict])
    return Change({"state": "running", "reason": None, "audits": n}, [verdict])


def used(s: RunState, v: Verdict, model: str) -> RunState:
    """The audit's tokens and cost added to the run's figures (pure)."""
    had = s.audit_usage or Usage()
    s = s.but(audit_usage=had.but(**(had + v.used).plain(6)))  # extras a newer autodev wrote stay
    # One generation per audit the model answered, however many requests it took (as ever).
    return add_models(s, {model: ModelUsage(generations=int(v.by == "model")) + v.used})
