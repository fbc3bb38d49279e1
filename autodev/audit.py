"""The stateless audit of a `done` post.

It sees only the objective (the user's messages), the done post, the change since the run
began (diff stat plus a bounded diff) and the output of `auditCheck`, and answers through the
`verdict(accept, gap)` tool. A failing `auditCheck` reopens the run without asking the model.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from autodev import prompts
from autodev.errors import AutodevError, ProviderError, ToolError
from autodev.harness import providers
from autodev.harness.registry import Args, Boolean, String, Tool, ToolEnv
from autodev.redact import scrubbed_env


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


@dataclass
class Verdict:
    accept: bool
    gap: str
    by: str  # "model" or "auditCheck"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0


def _git(repo: Path, *args: str, env: dict | None = None) -> str:
    r = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise AutodevError(
            f"git {' '.join(args[:3])} failed in {repo}: {r.stderr.strip()[:500]}",
            "check that the repository is intact (`git status`)",
        )
    return r.stdout


def change_since(repo: Path, base: str | None, limit: int) -> tuple[str, str]:
    """(diff stat, diff cut at `limit` characters) from `base` to the working tree, new files included.

    The working tree is staged into a throwaway index so the user's real index is never touched.
    """
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git(repo, "add", "-A", env=env)
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
        env, argv = room.env(env), room.wrap(argv)
    try:
        r = subprocess.run(
            argv,
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired as e:
        return False, f"`{command}` timed out after {timeout:g}s\n{e.stdout or ''}"
    out = (r.stdout + r.stderr)[-8000:]
    return r.returncode == 0, f"`{command}` exited {r.returncode}\n{out}"


def _request(target, messages, audit_id, max_retries, backoff_sec, on_retry) -> providers.Generation:
    """One audit request: transient failures are retried with backoff as a participant's are;
    what no retry fixes (a refusal, a usage limit, retries exhausted) is a ProviderError, which
    pauses the run with the audit still pending."""
    attempt = 0
    while True:
        attempt += 1
        try:
            return providers.complete(target, messages, [VERDICT.spec()], turn_id=audit_id, timeout=600)
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
            providers.sleep(delay)


def audit(
    *,
    repo: Path,
    objective: str,
    done_post: dict,
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
) -> Verdict:
    check_out = "(no auditCheck configured)"
    if check:
        ok, check_out = run_check(repo, check, check_timeout, secret_env, room)
        if not ok:
            return Verdict(False, f"auditCheck failed:\n{check_out[-3000:]}", "auditCheck")
    stat, diff = change_since(repo, base, diff_chars)
    prompt = prompts.render(
        "audit.md",
        {
            "objective": objective or "(no objective given)",
            "author": done_post["from"],
            "done_text": done_post["text"],
            "diff_stat": stat,
            "diff": diff or "(empty diff)",
            "check": check_out,
        },
        overrides,
    )
    messages = [{"role": "user", "content": prompt}]
    v = Verdict(False, "", "model")
    for _ in range(MAX_STEPS):
        gen = _request(targets[0], messages, audit_id, max_retries, backoff_sec, on_retry)
        v.prompt_tokens += gen.prompt_tokens
        v.completion_tokens += gen.completion_tokens
        v.cost += gen.cost or 0.0
        messages.append(gen.message)
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
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": f"error: {e}"})
                continue
            v.accept, v.gap = accept, gap
            if not v.accept and not v.gap:
                v.gap = "the audit reopened the work without naming a gap"
            return v
        if not gen.message.get("tool_calls"):
            messages.append({"role": "user", "content": "Answer with the verdict tool."})
    v.gap = f"the audit gave no verdict in {MAX_STEPS} requests; review the work by hand"
    return v
