"""The stateless audit of a `done` post.

It sees only the objective (the user's messages), the done post, the change since the run
began (diff stat plus a bounded diff) and the output of `auditCheck` (and, unless doneEvidence = "off", the tests' evidence), and answers through the
`verdict(accept, gap)` tool. A failing `auditCheck` reopens the run without asking the model.
"""

from __future__ import annotations

import concurrent.futures
import json
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field

from autodev.config import prompts
from autodev.errors import ProviderError, ToolError
from autodev.guard.redact import scrubbed_env
from autodev.guard.secrets import SECRET_FILES, TooManyFiles
from autodev.harness import providers
from autodev.harness.registry import Args, Boolean, String, Tool, ToolEnv
from autodev.host import hostgit, spawn
from autodev.records.post import Post
from autodev.records.state import Usage
from autodev.store.journal import safe
from autodev.timeline.git import stage_worktree


class VerdictArgs(Args):
    accept: Boolean = Field(description="true: the work is done; false: reopen it")
    gap: String = Field(default="", description="what is missing (required when accept is false)")


VERDICT = Tool(
    "verdict",
    "Your decision: accept the work, or reopen it naming the gap.",
    "audit",
    lambda env, accept, gap: (accept, gap),
    args=VerdictArgs,
)
MAX_STEPS = 3
REQUEST_TIMEOUT_SEC = 600


class AuditStopped(Exception):
    """The user stopped the run while the audit waited on its model: the done post stays
    unaudited, and the next `start` audits it again."""


@dataclass
class Verdict:
    accept: bool
    gap: str
    by: str  # "model" or "auditCheck"
    used: Usage = field(default_factory=Usage)  # what its requests spent, in all


def _git(repo: Path, *args: str, env: dict | None = None) -> str:
    return hostgit.out(repo, *args, env=env)


def change_since(
    repo: Path, base: str | None, limit: int, secret_files: Iterable[str] = SECRET_FILES
) -> tuple[str, str]:
    """(diff stat, diff cut at `limit` characters) from `base` to the working tree, new files included.

    The working tree is staged into a throwaway index so the user's real index is never touched;
    secret files are left out of it (the diff goes to the audit's model).
    """
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        stage_worktree(repo, env, secret_files)
        ref = base or _git(repo, "hash-object", "-t", "tree", "/dev/null").strip()
        stat = _git(repo, "diff", "--cached", "--stat", ref, env=env) or "(no change)"
        diff = _git(repo, "diff", "--cached", ref, env=env)
    if len(diff) > limit:
        diff = diff[:limit] + f"\n[diff cut at {limit} characters]"
    return stat.strip(), diff


def run_check(repo: Path, command: str, timeout: float, secret_env=(), room=None) -> tuple[bool, str]:
    """Run auditCheck like a participant's command: scrubbed, and in the sandbox `room`."""
    env, argv = scrubbed_env(secret_env), ["bash", "-c", command]
    if room is not None:
        try:
            env, argv = room.env(env), room.wrap(argv)
        except TooManyFiles as e:  # the sandbox could not cover every secret file: no run
            return False, f"`{command}` was not run: {e}"
    try:
        r = spawn.run(
            argv,
            "sandboxed",
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            stdin=spawn.DEVNULL,
            start_new_session=True,
        )
    except spawn.TimeoutExpired as e:
        return False, f"`{command}` timed out after {timeout:g}s\n{e.stdout or ''}"
    out = (r.stdout + r.stderr)[-8000:]
    return r.returncode == 0, f"`{command}` exited {r.returncode}\n{out}"


def _complete(target, messages, audit_id, stopping: Callable[[], bool], model=None) -> providers.Generation:
    """The model's answer, or AuditStopped as soon as `stopping()` (the request is left to end in
    its worker thread; its answer is dropped, and the audit is asked again after `start`)."""
    from autodev.harness.deadline import STOPPING, wait_future

    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="audit-request")
    try:
        future = pool.submit(
            model.complete if model is not None else providers.complete,
            target,
            messages,
            [VERDICT.spec()],
            turn_id=audit_id,
            timeout=REQUEST_TIMEOUT_SEC,
        )
        why = wait_future(future, REQUEST_TIMEOUT_SEC + 30, stopping)
        if why == STOPPING:
            raise AuditStopped()
        if why:
            raise providers.Transient(f"the audit's request got {why}")
        return future.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _pause(seconds: float, stopping: Callable[[], bool]) -> None:
    """A backoff that `stop` cuts short."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        if stopping():
            raise AuditStopped()
        providers.sleep(min(left, 0.2))


def _request(
    target, messages, audit_id, max_retries, backoff_sec, on_retry, stopping: Callable[[], bool], model=None
) -> providers.Generation:
    """One audit request: transient failures are retried with backoff as a participant's are;
    what no retry fixes (a refusal, a usage limit, retries exhausted) is a ProviderError, which
    pauses the run with the audit still pending; `stop` raises AuditStopped."""
    attempt = 0
    while True:
        attempt += 1
        try:
            return _complete(target, messages, audit_id, stopping, model)
        except providers.Refused as e:
            raise e.to_error("the audit", target.label) from e
        except providers.ContextExceeded as e:
            raise ProviderError(
                f"the audit's request does not fit the context window of {target.label}",
                "lower auditDiffChars in .autodev/config.toml, or give the audit a model with a larger "
                "window in the [audit] table of .autodev/team.toml",
            ) from e
        except providers.RateLimited as e:
            err = ProviderError(
                f"the audit's model {target.label} is at its usage limit"
                + (f" (retry after {e.retry_after:.0f} s)" if e.retry_after else ""),
                "wait for the reset, or give the audit another model in the [audit] table of "
                ".autodev/team.toml; then `autodev resume` runs the audit again",
                detail=e.detail[:2000],
            )
            raise err from e
        except providers.Transient as e:
            if attempt > max_retries:
                err = ProviderError(
                    f"the audit's model {target.label} failed {attempt} times",
                    "check the provider's status; `autodev resume` runs the audit again",
                    detail=str(e)[:2000],
                )
                raise err from e
            delay = providers.backoff(attempt, backoff_sec)
            if on_retry:
                on_retry(attempt, delay, str(e))
            _pause(delay, stopping)


def audit(
    *,
    repo: Path,
    objective: str,
    done_post: Post,
    base: str | None,
    check: str,
    check_timeout: float,
    targets: list[providers.Target],
    audit_id: str,
    diff_chars: int,
    overrides: Path | None,
    secret_env=(),
    room=None,
    max_retries: int = 0,
    backoff_sec: float = 1.0,
    on_retry=None,
    stopping: Callable[[], bool] = lambda: False,
    model=None,
    after_check: Callable[[], object] | None = None,
    evidence: str = "",
    secret_files: Iterable[str] = SECRET_FILES,
) -> Verdict:
    """`after_check`: called once the check has run, before any git command reads the
    repository (the daemon moves out what the check left for git to run)."""
    check_out = "(no auditCheck configured)"
    if check:
        ok, check_out = run_check(repo, check, check_timeout, secret_env, room)
        if after_check is not None:
            after_check()
        if not ok:
            return Verdict(False, f"auditCheck failed:\n{check_out[-3000:]}", "auditCheck")
    stat, diff = change_since(repo, base, diff_chars, secret_files)
    prompt = prompts.render(
        "audit.md",
        {
            "objective": objective or "(no objective given)",
            "author": done_post.from_,
            "done_text": done_post.text,
            "diff_stat": stat,
            "diff": diff or "(empty diff)",
            "check": check_out,
        },
        overrides,
    )
    if evidence:  # the tests' evidence block (daemon/auditing.evidence_block); none: as before
        prompt = prompt.rstrip("\n") + "\n" + evidence
    messages: list[dict[str, object]] = [{"role": "user", "content": prompt}]
    v = Verdict(False, "", "model")
    for _ in range(MAX_STEPS):
        gen = _request(targets[0], messages, audit_id, max_retries, backoff_sec, on_retry, stopping, model)
        v.used = v.used + Usage(
            prompt_tokens=gen.prompt_tokens, completion_tokens=gen.completion_tokens, cost=gen.cost or 0.0
        )
        messages.append(safe(gen.message))  # a lone surrogate would fail the next request
        for call in gen.message.get("tool_calls") or []:
            if call["function"]["name"] != "verdict":
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "content": "error: only the verdict tool is available",
                    }
                )
                continue
            try:
                accept, gap = VERDICT.call(ToolEnv(), json.loads(call["function"]["arguments"] or "{}"))
            except (ValueError, ToolError) as e:
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": safe(f"error: {e}")})
                continue
            v.accept, v.gap = accept, gap
            if not v.accept and not v.gap:
                v.gap = "the audit reopened the work without naming a gap"
            return v
        if not gen.message.get("tool_calls"):
            messages.append({"role": "user", "content": "Answer with the verdict tool."})
    v.gap = f"the audit gave no verdict in {MAX_STEPS} requests; review the work by hand"
    return v
