"""The audit of a `done` post, as the daemon calls it: the one effect that calls a model.

`effects.post_change` gets `audit` as an argument; this is the daemon's: it shows the run as
`auditing`, asks the stateless audit (`audit.py`) with the audit model, adds its usage to the
run's figures, and returns the verdict's change (complete, reopened, or paused at the audit
limit or on a provider error, with `audit_pending` so that resuming audits the same post).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from autodev.config import RunConfig, Team
from autodev.config.team import AuditConfig
from autodev.daemon import gitwatch
from autodev.daemon.effects import Change, Note, add_models
from autodev.daemon.handles import Run, Scripted
from autodev.daemon.inputs import SetState, todo
from autodev.errors import ProviderError
from autodev.guard.sandbox import Room
from autodev.harness import providers
from autodev.harness.evidence import EvidenceStopped
from autodev.records.events import (
    EVIDENCE_IDS,
    AuditEvent,
    AuditStartedEvent,
    AuditStoppedEvent,
    ErrorEvent,
    EvidenceEvent,
    RetryEvent,
)
from autodev.records.evidence import Evidence, EvidenceNote
from autodev.records.post import Post
from autodev.records.state import ModelUsage, RunState, Usage
from autodev.rules import reasons
from autodev.rules.reasons import reason

if TYPE_CHECKING:
    from autodev.harness.audit import Verdict
    from autodev.harness.model import Model


@dataclass
class AuditCall:
    """What the audit is given besides the post and the state: the run, its settings, where the
    check runs, the model (replay) and the loop's state change and stop check."""

    run: Run
    config: RunConfig
    team: Team
    secret_env: list[str]
    room: Room
    scripted: Scripted
    set_state: SetState
    stopping: Callable[[], bool]
    model: Model | None = None


def audit(post: Post, st: RunState, call: AuditCall) -> Change:
    """The audit of a `done` post: the tests' evidence, then the audit model's verdict, as the
    change it leads to (the verdict's note, complete or reopened, or paused on a provider)."""
    run, config, secret_env, room, stopping = call.run, call.config, call.secret_env, call.room, call.stopping
    from autodev.harness.audit import AuditStopped
    from autodev.harness.audit import audit as ask

    if todo(run.state.read()):
        # A pause, stop or rewind the user asked for while the done's turn ran holds before the
        # audit: the done waits unaudited (`audit_pending`, in the same update as `applied_seq`),
        # the loop applies the requests at this boundary, and the audit runs once the run runs.
        return Change({"audit_pending": post.seq})
    call.set_state("auditing", None)
    a = call.team.audit_model()
    targets = _targets(a, call.scripted, config)
    n = st.audits + 1
    audit_id = f"{run.run_id}:audit{post.seq}"
    run.events.emit(AuditStartedEvent(seq=post.seq, n=n))
    ev = _tests_first(
        post, st, n, audit_id, run=run, config=config, secret_env=secret_env, room=room, stopping=stopping
    )
    if isinstance(ev, Change):
        return ev
    shown = _shown(post, ev)
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
            on_retry=_on_retry(run, a.model),
            stopping=stopping,
            model=call.model,
            # auditCheck ran the repository's code (its tests) with the repository writable
            after_check=lambda: gitwatch.quarantine(run, "audit", st.turn),
            evidence=evidence_block(ev, overrides=run.overrides) if ev is not None else "",
            secret_files=config.secret_files,
        )
    except AuditStopped:
        # The stop applies at the turn boundary that follows; `start` audits the post again.
        run.events.emit(AuditStoppedEvent(seq=post.seq, n=n))
        return Change({"state": "running", "reason": None, "audit_pending": post.seq})
    except ProviderError as e:
        run.events.emit(ErrorEvent(participant="audit", message=str(e), detail=e.detail))
        # The done post stays unaudited: resuming the run audits it before any turn.
        return Change({"state": "paused", "reason": reasons.provider(e), "audit_pending": post.seq})
    return _judged(post, v, a.model, n, audit_id, shown, run=run, config=config)


def _shown(post: Post, ev: Evidence | None) -> dict[str, object]:
    """The evidence as the verdict's note carries it."""
    return {"evidence": {"of": post.seq, **EvidenceNote.of(ev).model_dump()}} if ev is not None else {}


def _tests_first(
    post: Post,
    st: RunState,
    n: int,
    audit_id: str,
    *,
    run: Run,
    config: RunConfig,
    secret_env: list[str],
    room: Room,
    stopping: Callable[[], bool],
) -> Evidence | Change | None:
    """The project's tests on the done post (doneEvidence): their evidence, or the change that
    ends the audit here (stopped, or reopened by the tests when they decide)."""
    if config.done_evidence == "off":
        return None
    try:
        ev = done_evidence(
            post, st, run=run, config=config, secret_env=secret_env, room=room, stopping=stopping
        )
    except EvidenceStopped:
        run.events.emit(AuditStoppedEvent(seq=post.seq, n=n))
        return Change({"state": "running", "reason": None, "audit_pending": post.seq})
    if ev is not None and config.done_evidence == "required" and (gaps := ev.gaps()):
        # The tests decided: the audit model is not asked (SPEC §22).
        gap = reopen_text(ev, gaps)
        run.state.update(lambda s: s.changed(audit_pending=None))
        run.events.emit(AuditEvent(seq=post.seq, accept=False, gap=gap[:1000], by="evidence"))
        return _reopened(post, n, audit_id, gap, "evidence", config, _shown(post, ev))
    return ev


def _targets(a: AuditConfig, scripted: Scripted, config: RunConfig) -> list[providers.Target]:
    return providers.targets_for(
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


def _on_retry(run: Run, label: str) -> Callable[[int, float, str], None]:
    def retried(attempt: int, delay: float, error: str) -> None:
        run.events.emit(
            RetryEvent(participant="audit", model=label, attempt=attempt, delay=delay, error=error[:300])
        )

    return retried


def _judged(
    post: Post,
    v: Verdict,
    label: str,
    n: int,
    audit_id: str,
    shown: dict[str, object],
    *,
    run: Run,
    config: RunConfig,
) -> Change:
    """The model's verdict: its usage in state, its event, and the change it leads to."""
    run.state.update(lambda s: used(s, v, label).changed(audit_pending=None))
    u = v.used
    run.events.emit(
        AuditEvent(
            seq=post.seq, accept=v.accept, gap=v.gap[:1000], by=v.by, model=label,
            prompt_tokens=u.prompt_tokens, completion_tokens=u.completion_tokens, cost=round(u.cost, 9),
        )
    )  # fmt: skip
    if not v.accept:
        return _reopened(post, n, audit_id, v.gap, v.by, config, shown)
    verdict = Note(
        "audit",
        f"Accepted. {v.gap}".strip(),
        id=f"{audit_id}:verdict",
        extra={"verdict": "accept", **shown},
    )
    return Change({"state": "complete", "audits": n, "reason": reason("complete")}, [verdict])


def _reopened(
    post: Post, n: int, audit_id: str, gap: str, by: str, config: RunConfig, shown: dict[str, object]
) -> Change:
    verdict = Note(
        "audit",
        f"Reopened: {gap}",
        post.from_,
        id=f"{audit_id}:verdict",
        extra={"verdict": "reopen", "by": by, **shown},
    )
    if n >= config.max_accept_checks:
        return Change({"state": "paused", "reason": reason("audit_limit", n=n), "audits": n}, [verdict])
    return Change({"state": "running", "reason": None, "audits": n}, [verdict])


def done_evidence(
    post: Post,
    st: RunState,
    *,
    run: Run,
    config: RunConfig,
    secret_env: list[str],
    room: Room,
    stopping: Callable[[], bool],
) -> Evidence | None:
    """The done's test evidence, recorded (event) before any decision; None when the repository
    shows no tests, or when "no tests found" was already said in this run (it is said once)."""
    from autodev.harness import evidence

    found = evidence.command_for(run.paths.repo, config.test_command)
    if found is None:
        return None  # a repository without tests: the done goes on exactly as without evidence
    setup = evidence.TestSetup(
        repo=run.paths.repo,
        folder=run.paths.run_dir / "evidence",
        command=found[0],
        chosen=found[1],
        timeout=config.test_timeout_sec,
        room_for=lambda work: room.sandbox.room(
            work, hide=room.hide, network=False, expose=room.expose, secret_files=room.secret_files
        ),
        secret_env=tuple(secret_env),
        secret_files=tuple(config.secret_files),
        stopping=stopping,
    )
    key = f"{post.seq}\0{post.id or ''}\0{post.ts}"
    ev = evidence.evidence(setup, st.base_head, key)
    if ev.outcome == "no_tests":
        said = setup.folder / "no-tests-said"
        if said.exists() and not (setup.folder / f"said-{post.seq}").exists():
            return None
        said.touch()
        (setup.folder / f"said-{post.seq}").touch()  # the same done audited again says it again
    run.events.emit(
        EvidenceEvent(
            seq=post.seq,
            summary=ev.summary(),
            outcome=ev.outcome,
            command=ev.command,
            chosen=ev.chosen,
            counts=ev.counts(),
            fail_to_pass=ev.fail_to_pass[:EVIDENCE_IDS],
            pass_to_fail=ev.pass_to_fail[:EVIDENCE_IDS],
            still_failing=ev.still_failing[:EVIDENCE_IDS],
            tests_changed=ev.tests_changed[:EVIDENCE_IDS],
            reason=ev.reason[:1000],
            base_sec=ev.base_sec,
            head_sec=ev.head_sec,
            base_cached=ev.base_cached,
        )
    )
    return ev


def reopen_text(ev: Evidence, gaps: list[str]) -> str:
    """The reopen post of the evidence gate: what is wrong, by test id, and how to see it."""
    from autodev.harness.testresults import simple_pytest

    named = (ev.pass_to_fail or ev.still_failing)[:10]
    see = f"{ev.command} {' '.join(named)}" if named and simple_pytest(ev.command) else ev.command
    return (
        'the project\'s tests do not show the work done (doneEvidence = "required"): '
        + "; ".join(gaps)
        + f". See them with: `{see}`"
    )


def evidence_block(ev: Evidence, overrides: Path | None = None) -> str:
    """The fixed, short block of the evidence in the audit's prompt."""
    from autodev.config import prompts

    def ids(xs: list[str]) -> str:
        return ", ".join(xs[:10]) + (f" and {len(xs) - 10} more" if len(xs) > 10 else "") if xs else "none"

    return prompts.render(
        "audit_evidence.md",
        {
            "command": ev.command,
            "outcome": ev.outcome + (f" ({ev.reason})" if ev.reason else ""),
            "summary": ev.summary(),
            "fail_to_pass": ids(ev.fail_to_pass),
            "pass_without_code": ids(ev.pass_without_code),
            "pass_to_fail": ids(ev.pass_to_fail),
            "still_failing": ids(ev.still_failing),
            "pass_to_pass": str(len(ev.pass_to_pass)),
            "tests_changed": ids(ev.tests_changed),
        },
        overrides,
    )


def used(s: RunState, v: Verdict, model: str) -> RunState:
    """The audit's tokens and cost added to the run's figures (pure)."""
    had = s.audit_usage or Usage()
    s = s.changed(audit_usage=had.but(**(had + v.used).plain(6)))  # extras a newer autodev wrote stay
    # One generation per audit the model answered, however many requests it took (as ever).
    return add_models(s, {model: ModelUsage(generations=int(v.by == "model")) + v.used})
