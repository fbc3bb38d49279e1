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
from typing import TYPE_CHECKING

from pydantic import Field

from autodev.config import prompts
from autodev.errors import ProviderError, ToolError
from autodev.guard.redact import scrubbed_env
from autodev.guard.secrets import SECRET_FILES, TooManyFiles
from autodev.harness import providers
from autodev.harness.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolMessage,
    assistant,
    calls_of,
)
from autodev.harness.registry import Args, Boolean, String, Tool, ToolEnv
from autodev.host import hostgit, spawn
from autodev.records.post import Post
from autodev.records.state import Usage
from autodev.store.journal import safe, safe_text
from autodev.timeline.git import stage_worktree

if TYPE_CHECKING:
    from autodev.guard.sandbox import Room
    from autodev.harness.model import Model


class VerdictArgs(Args):
    accept: Boolean = Field(description="true: the work is done; false: reopen it")
    gap: String = Field(default="", description="what is missing (required when accept is false)")


def _verdict(env: ToolEnv, accept: bool, gap: str) -> tuple[bool, str]:
    return accept, gap


VERDICT = Tool(
    "verdict",
    "Your decision: accept the work, or reopen it naming the gap.",
    "audit",
    _verdict,
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


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
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


def run_check(
    repo: Path, command: str, timeout: float, secret_env: Iterable[str] = (), room: Room | None = None
) -> tuple[bool, str]:
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


@dataclass(frozen=True)
class _Asking:
    """How the audit asks its model: which one, for which audit, how often after a transient
    failure (`on_retry` is told of each retry), and what says the user is stopping the run."""

    target: providers.Target
    audit_id: str
    max_retries: int
    backoff_sec: float
    on_retry: Callable[[int, float, str], object] | None
    stopping: Callable[[], bool]
    model: Model | None

    def complete(self, messages: list[Message]) -> providers.Generation:
        """The model's answer, or AuditStopped as soon as `stopping()` (the request is left to end
        in its worker thread; its answer is dropped, and the audit is asked again after `start`)."""
        from autodev.harness.deadline import STOPPING, wait_future

        pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="audit-request")
        try:
            future = pool.submit(
                self.model.complete if self.model is not None else providers.complete,
                self.target,
                messages,
                [VERDICT.spec()],
                turn_id=self.audit_id,
                timeout=REQUEST_TIMEOUT_SEC,
            )
            why = wait_future(future, REQUEST_TIMEOUT_SEC + 30, self.stopping)
            if why == STOPPING:
                raise AuditStopped()
            if why:
                raise providers.Transient(f"the audit's request got {why}")
            return future.result()
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def pause(self, seconds: float) -> None:
        """A backoff that `stop` cuts short."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            if self.stopping():
                raise AuditStopped()
            providers.sleep(min(left, 0.2))

    def request(self, messages: list[Message]) -> providers.Generation:
        """One audit request: transient failures are retried with backoff as a participant's are;
        what no retry fixes (a refusal, a usage limit, retries exhausted) is a ProviderError, which
        pauses the run with the audit still pending; `stop` raises AuditStopped."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return self.complete(messages)
            except providers.Transient as e:
                if attempt > self.max_retries:
                    err = ProviderError(
                        f"the audit's model {self.target.label} failed {attempt} times",
                        "check the provider's status; `autodev resume` runs the audit again",
                        detail=str(e)[:2000],
                    )
                    raise err from e
                delay = providers.backoff(attempt, self.backoff_sec)
                if self.on_retry:
                    self.on_retry(attempt, delay, str(e))
                self.pause(delay)
            except (providers.Refused, providers.ContextExceeded, providers.RateLimited) as e:
                raise _unfixable(self.target, e) from e


def _unfixable(target: providers.Target, e: Exception) -> ProviderError:
    """A failure no retry of the audit's request fixes, as what the user can do about it."""
    if isinstance(e, providers.Refused):
        return e.to_error("the audit", target.label)
    if isinstance(e, providers.RateLimited):
        return ProviderError(
            f"the audit's model {target.label} is at its usage limit"
            + (f" (retry after {e.retry_after:.0f} s)" if e.retry_after else ""),
            "wait for the reset, or give the audit another model in the [audit] table of "
            ".autodev/team.toml; then `autodev resume` runs the audit again",
            detail=e.detail[:2000],
        )
    return ProviderError(
        f"the audit's request does not fit the context window of {target.label}",
        "lower auditDiffChars in .autodev/config.toml, or give the audit a model with a larger "
        "window in the [audit] table of .autodev/team.toml",
    )


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
    secret_env: Iterable[str] = (),
    room: Room | None = None,
    max_retries: int = 0,
    backoff_sec: float = 1.0,
    on_retry: Callable[[int, float, str], object] | None = None,
    stopping: Callable[[], bool] = lambda: False,
    model: Model | None = None,
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
    asking = _Asking(targets[0], audit_id, max_retries, backoff_sec, on_retry, stopping, model)
    return _decide(asking, prompt)


def _decide(asking: _Asking, prompt: str) -> Verdict:
    """Ask the model for its verdict, at most MAX_STEPS times."""
    messages: list[Message] = [{"role": "user", "content": prompt}]
    v = Verdict(False, "", "model")
    for _ in range(MAX_STEPS):
        gen = asking.request(messages)
        v.used = v.used + Usage(
            prompt_tokens=gen.prompt_tokens, completion_tokens=gen.completion_tokens, cost=gen.cost or 0.0
        )
        answer: AssistantMessage = assistant(
            safe(gen.message)
        )  # a lone surrogate would fail the next request
        messages.append(answer)
        for call in calls_of(gen.message):
            said = _verdict_of(call)
            if isinstance(said, str):
                messages.append(_tool_answer(call, said))
                continue
            v.accept, v.gap = said
            if not v.accept and not v.gap:
                v.gap = "the audit reopened the work without naming a gap"
            return v
        if not gen.message.get("tool_calls"):
            messages.append({"role": "user", "content": "Answer with the verdict tool."})
    v.gap = f"the audit gave no verdict in {MAX_STEPS} requests; review the work by hand"
    return v


def _verdict_of(call: ToolCall) -> tuple[bool, str] | str:
    """The verdict a call gives, or the error the model reads."""
    if call["function"]["name"] != "verdict":
        return "error: only the verdict tool is available"
    try:
        raw: object = json.loads(call["function"].get("arguments") or "{}")
        return VERDICT.call(ToolEnv(), raw)
    except (ValueError, ToolError) as e:
        return safe_text(f"error: {e}")


def _tool_answer(call: ToolCall, text: str) -> ToolMessage:
    return {"role": "tool", "tool_call_id": call["id"], "content": text}
