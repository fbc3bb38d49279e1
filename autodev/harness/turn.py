"""One turn: a participant's tool loop, from the turn prompt to its one post.

Every effect is preceded by an intent record in the harness log and followed by its result:
turn started (with git HEAD and the credit baseline), generation started (with its attempt
number), tool started (with effective arguments and whether it is safe to replay), post
committed, turn finished. Any prefix of that log is a state recovery can start from.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from autodev import credit, prompts
from autodev.errors import AutodevError, ProviderError, ToolError
from autodev.harness import compaction, providers
from autodev.harness.recovery import CRASHED, INTERRUPTED, Resume
from autodev.harness.registry import Tool, ToolEnv
from autodev.harness.thread_tools import POST, READ_THREAD, TELL_USER
from autodev.harness.tools import WORKSPACE_TOOLS, Workspace, write_refusal
from autodev.journal import safe, safe_text
from autodev.moves import MOVES


class TurnStopped(Exception):
    """The user asked the run to stop while the turn was running (at a step boundary)."""


class AllModelsLimited(Exception):
    """Every model of the participant hit a usage limit; the run waits until `reset_at`."""

    def __init__(self, reset_at: float, detail: str):
        super().__init__(detail)
        self.reset_at, self.detail = reset_at, detail


@dataclass
class TurnContext:
    run_id: str
    turn: int
    name: str
    can_write: bool
    team_writers: dict[str, bool]
    repo: Path
    thread: object  # autodev.thread.Thread
    events: object  # autodev.events.Events
    hlog: object  # autodev.journal.Journal (the harness log)
    workspace: Workspace
    targets: list[providers.Target]
    system_prompt: str
    turn_prompt: str
    restricted: bool = False
    max_steps: int = 40
    timeout_sec: float = 1200.0
    max_retries: int = 4
    retry_backoff_sec: float = 2.0
    limited_until: dict[str, float] = field(default_factory=dict)  # target label -> epoch secs
    overrides: Path | None = None
    withheld: frozenset[str] = frozenset()  # tools of capabilities this participant does not hold
    extra_tools: list[Tool] = field(default_factory=list)  # granted beyond the built-ins (MCP, browser)
    tool_guard: Callable[[str], str | None] | None = None  # refusal of a gate-required tool, or None
    browser: object = None  # autodev.harness.browser.Browser of this participant, when granted
    tell_user: Callable[[str, str | None], str] | None = None  # raises a notice; returns its id
    compactions: int = 0  # compactions made in this turn (status shows their sum)
    hooks: object | None = None  # autodev.hooks.Hooks, when config.toml declares any


@dataclass
class TurnResult:
    post: dict | None
    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    reason: str = ""
    told: bool = False
    models: dict[str, dict] = field(default_factory=dict)  # usage per model label (runs stats)
    cached_tokens: int = 0
    compactions: int = 0


def offered(ctx: TurnContext) -> dict[str, Tool]:
    """The tools this turn offers the model, by name: the thread tools, then the workspace
    tools the participant may use, less those of capabilities a notice holds."""
    thread = [POST, READ_THREAD] + ([TELL_USER] if ctx.tell_user else [])
    tools = thread + [t for t in [*ctx.workspace.tools(), *ctx.extra_tools] if t.name not in ctx.withheld]
    return {t.name: t for t in tools}


def _tool_specs(ctx: TurnContext) -> list[dict]:
    return [t.spec() for t in offered(ctx).values()]


def _compact(
    ctx: TurnContext, messages: list[dict], target: providers.Target, step: int, *, hard: bool, budget: int
) -> bool:
    """Fit `messages` into `budget` tokens by stubbing tool results; the stubs go to the harness
    log first, so resume replays exactly this. False when nothing could be compacted."""
    tools = _tool_specs(ctx)
    before = providers.estimate_tokens(messages, tools)
    stubs = compaction.plan(messages, tools, budget, hard=hard)
    if not stubs:
        return False
    ctx.hlog.append(
        {
            "type": "compacted",
            "run": ctx.run_id,
            "turn": ctx.turn,
            "step": step,
            "hard": hard,
            "stubs": stubs,
        }
    )
    compaction.apply(messages, stubs)
    ctx.compactions += 1
    ctx.events.emit(
        "compacted",
        participant=ctx.name,
        turn=ctx.turn,
        step=step,
        model=target.label,
        hard=hard,
        stubbed=len(stubs),
        tokens_before=before,
        tokens_after=providers.estimate_tokens(messages, tools),
        window=target.window,
    )
    return True


def _budget(target: providers.Target) -> int:
    """Input tokens a request may hold: the window minus the output cap (at least half of it)."""
    return max(target.window - target.max_output, target.window // 2)


def _generate(
    ctx: TurnContext, messages: list[dict], origins: dict[int, str], step: int, attempt: int = 0
) -> providers.Generation | None:
    """One model request, with failover on usage limits, backoff on transient errors and
    compaction when the messages outgrow the window. `attempt` counts the attempts already
    made (it survives restarts via the harness log). None: the turn cannot fit its window."""
    squeezed = False
    while True:
        usable = [t for t in ctx.targets if ctx.limited_until.get(t.label, 0) <= time.time()]
        if not usable:
            reset = min(ctx.limited_until.get(t.label, 0) for t in ctx.targets)
            raise AllModelsLimited(reset, f"every model of {ctx.name} is at its usage limit")
        target = usable[0]
        if providers.estimate_tokens(messages, _tool_specs(ctx)) > _budget(target):
            _compact(ctx, messages, target, step, hard=False, budget=_budget(target))
        attempt += 1
        ctx.hlog.append(
            {
                "type": "generation_started",
                "run": ctx.run_id,
                "turn": ctx.turn,
                "step": step,
                "attempt": attempt,
                "model": target.label,
            }
        )
        try:
            return providers.complete(
                target,
                messages,
                [t.spec() for t in offered(ctx).values()],
                turn_id=f"{ctx.run_id}:{ctx.turn}",
                timeout=ctx.timeout_sec,
                origins=origins,
            )
        except providers.ContextExceeded as e:
            ctx.events.emit(
                "context_exceeded",
                participant=ctx.name,
                turn=ctx.turn,
                model=target.label,
                error=str(e)[:500],
            )
            # Our estimate fitted but the provider counts more: compact harder, retry once.
            tighter = min(_budget(target), providers.estimate_tokens(messages, _tool_specs(ctx)) * 6 // 10)
            if squeezed or not _compact(ctx, messages, target, step, hard=True, budget=tighter):
                return None
            squeezed = True
        except providers.Refused as e:
            raise e.to_error(ctx.name, target.label) from e
        except providers.RateLimited as e:
            ctx.limited_until[target.label] = time.time() + e.retry_after
            nxt = [t.label for t in usable[1:]]
            ctx.events.emit(
                "failover",
                participant=ctx.name,
                turn=ctx.turn,
                model=target.label,
                to=nxt[0] if nxt else None,
                retry_after=e.retry_after,
            )
        except providers.Transient as e:
            if attempt > ctx.max_retries:
                raise ProviderError(
                    f"{ctx.name}'s model failed {attempt} times: {e}",
                    "check the provider's status; `autodev resume` tries again",
                ) from e
            delay = providers.backoff(attempt, ctx.retry_backoff_sec)
            ctx.events.emit(
                "retry",
                participant=ctx.name,
                turn=ctx.turn,
                model=target.label,
                attempt=attempt,
                delay=delay,
                error=str(e)[:300],
            )
            providers.sleep(delay)


def run_turn(ctx: TurnContext, resume: Resume | None = None) -> TurnResult:
    """Run one turn to its post (or to silence). With `resume`, continue an interrupted turn
    from its last safe boundary instead of starting afresh."""
    result, started = TurnResult(None), time.monotonic()
    if resume is None:
        baseline = credit.take_baseline(ctx.repo)
        messages = [
            {"role": "system", "content": ctx.system_prompt},
            {"role": "user", "content": ctx.turn_prompt},
        ]
        ctx.hlog.append(
            {
                "type": "turn_started",
                "run": ctx.run_id,
                "turn": ctx.turn,
                "participant": ctx.name,
                "head": baseline.head,
                "baseline": credit.baseline_to_json(baseline),
                "messages": messages,
            }
        )
        ctx.events.emit("turn_started", participant=ctx.name, turn=ctx.turn)
        nudged, attempts, origins = False, 0, {}
    else:
        baseline = credit.baseline_from_json(resume.baseline)
        messages, nudged, attempts = resume.messages, resume.nudged, resume.attempts
        origins = dict(resume.origins)
        result.steps, result.told = resume.steps, resume.told
        # Tokens and cost spent before the crash or the provider pause are part of this turn.
        result.prompt_tokens, result.completion_tokens = resume.prompt_tokens, resume.completion_tokens
        result.cost, result.models = resume.cost, {k: dict(v) for k, v in resume.models.items()}
        result.cached_tokens = resume.cached_tokens
        ctx.compactions = resume.compactions  # made before the crash; later ones add to them
        ctx.events.emit(
            "turn_resumed",
            participant=ctx.name,
            turn=ctx.turn,
            step=resume.steps,
            pending_tools=len(resume.pending),
        )
        for call, began in resume.pending:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": _resume_call(ctx, call, began, baseline, result),
                }
            )
    while result.post is None:
        if ctx.workspace.stopping is not None and ctx.workspace.stopping():
            raise TurnStopped()  # the turn stays open; `start` continues it from here
        if result.steps >= ctx.max_steps:
            result.reason = f"reached maxStepsPerTurn ({ctx.max_steps}) without a post"
            break
        if time.monotonic() - started > ctx.timeout_sec:
            result.reason = "turn ran past turnTimeoutMin without a post"
            break
        step = result.steps + 1
        gen = _generate(ctx, messages, origins, step, attempts)
        attempts = 0
        if gen is None:
            result.reason = "context"
            break
        result.steps = step
        result.prompt_tokens += gen.prompt_tokens
        result.completion_tokens += gen.completion_tokens
        result.cached_tokens += gen.cached_tokens
        result.cost += gen.cost or 0.0
        used = result.models.setdefault(
            gen.model, {"generations": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0}
        )
        used["generations"] += 1
        used["prompt_tokens"] += gen.prompt_tokens
        used["completion_tokens"] += gen.completion_tokens
        used["cost"] += gen.cost or 0.0
        ctx.hlog.append(
            {
                "type": "generation_finished",
                "run": ctx.run_id,
                "turn": ctx.turn,
                "step": step,
                "message": gen.message,
                "model": gen.model,
                "source": gen.source,
                "prompt_tokens": gen.prompt_tokens,
                "completion_tokens": gen.completion_tokens,
                "cached_tokens": gen.cached_tokens,
                "cost": gen.cost,
            }
        )
        ctx.events.emit(
            "generation",
            participant=ctx.name,
            turn=ctx.turn,
            step=step,
            model=gen.model,
            prompt_tokens=gen.prompt_tokens,
            completion_tokens=gen.completion_tokens,
            cached_tokens=gen.cached_tokens,
            cost=gen.cost,
        )
        messages.append(safe(gen.message))  # a lone surrogate would fail the next request
        origins[len(messages) - 1] = gen.source
        calls = gen.message.get("tool_calls") or []
        if not calls:
            if nudged:
                result.reason = "the model stopped twice without posting"
                break
            nudged = True
            nudge = {
                "role": "user",
                "content": prompts.render("nudge.md", {"kinds": ", ".join(MOVES)}, ctx.overrides),
            }
            ctx.hlog.append({"type": "nudged", "run": ctx.run_id, "turn": ctx.turn, "message": nudge})
            messages.append(nudge)
            continue
        for call in calls:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": _run_call(ctx, call, baseline, result),
                }
            )
    result.compactions = ctx.compactions
    ctx.hlog.append(
        {
            "type": "turn_finished",
            "run": ctx.run_id,
            "turn": ctx.turn,
            "seq": result.post["seq"] if result.post else None,
            "reason": result.reason,
        }
    )
    ctx.events.emit(
        "turn_ended",
        participant=ctx.name,
        turn=ctx.turn,
        steps=result.steps,
        posted=result.post["seq"] if result.post else None,
        reason=result.reason or None,
    )
    return result


def _resume_call(
    ctx: TurnContext, call: dict, began: dict | None, baseline: credit.Baseline, result: TurnResult
) -> str:
    """A tool call of the last known model answer that has no logged result."""
    decided = (began or {}).get("hook")
    if decided and decided.get("blocked"):  # the hook's answer was recorded: not asked again
        return _finish(ctx, call["id"], _blocked(decided))
    name = call["function"]["name"]
    crashes = (began or {}).get("crashes", 1)
    if began is None or (began.get("replay_safe") and crashes < 2) or name == "post":
        # Never started, or safe to run again (reads; a post is idempotent by its id). A read
        # in flight at the last two crashes is what crashes the daemon: not run a third time.
        return _run_call(ctx, call, baseline, result, decided)
    text = INTERRUPTED if crashes < 2 else CRASHED
    ctx.hlog.append(
        {
            "type": "tool_finished",
            "run": ctx.run_id,
            "turn": ctx.turn,
            "call_id": call["id"],
            "result": text,
            "synthetic": True,
        }
    )
    ctx.events.emit("tool_interrupted", participant=ctx.name, turn=ctx.turn, name=name, crashes=crashes)
    return text


def _blocked(hook: dict) -> str:
    return f"blocked by a before_tool hook: {hook['blocked']}"


def _finish(ctx: TurnContext, call_id: str, out: str) -> str:
    ctx.hlog.append(
        {
            "type": "tool_finished",
            "run": ctx.run_id,
            "turn": ctx.turn,
            "call_id": call_id,
            "result": out[:4000],
        }
    )
    return out


def _run_call(
    ctx: TurnContext, call: dict, baseline: credit.Baseline, result: TurnResult, decided: dict | None = None
) -> str:
    name = call["function"]["name"]
    try:
        args = json.loads(call["function"].get("arguments") or "{}")
        if not isinstance(args, dict):
            raise ValueError("arguments must be a JSON object")
    except (ValueError, RecursionError) as e:
        return f"error: the arguments of {name} are not valid JSON ({e}); send a JSON object"
    env = ToolEnv(workspace=ctx.workspace, turn=ctx, result=result, baseline=baseline, call_id=call["id"])
    tools = offered(ctx)
    if name == "post":  # it keeps its own intent records
        return POST.call(env, args)
    tool = tools.get(name)
    hook = None
    runs = tool is not None and (result.post is None or tool.capability == "thread")
    if ctx.hooks and runs:
        # The effective outcome goes into tool_started: a resumed turn reuses it (`decided`).
        hook = decided or ctx.hooks.before_tool(name, args, _hook_data(ctx))
        if hook:
            args = hook["args"]
    ctx.hlog.append(
        {
            "type": "tool_started",
            "run": ctx.run_id,
            "turn": ctx.turn,
            "call_id": call["id"],
            "name": name,
            "args": args,
            "replay_safe": bool(tool and tool.replay_safe),
            **({"hook": hook} if hook else {}),
        }
    )
    ctx.events.emit("tool", participant=ctx.name, turn=ctx.turn, name=name)
    if result.post is not None and not (tool and tool.capability == "thread"):
        out = "skipped: your turn ended with your post"
    elif hook and hook["blocked"]:
        out = _blocked(hook)
    else:
        try:
            if tool is None:
                raise ToolError(_unavailable(ctx, name, tools))
            refusal = ctx.tool_guard(name) if ctx.tool_guard else None
            if refusal:
                raise ToolError(refusal)
            out = safe_text(str(tool.call(env, args)))
        except ToolError as e:
            out = f"error: {e}"
        except AutodevError:
            raise  # a log that cannot be written: the run faults, as everywhere
        except Exception as e:  # a bug in a tool ends the call, not the daemon
            out = f"error: {name} failed inside autodev ({type(e).__name__}: {safe_text(str(e))[:300]})"
            ctx.events.emit("error", participant=ctx.name, turn=ctx.turn, message=out)
        if ctx.hooks and tool is not None:
            out = ctx.hooks.after_tool(name, args, out, _hook_data(ctx))
    return _finish(ctx, call["id"], out)


def _hook_data(ctx: TurnContext) -> dict:
    return {"participant": ctx.name, "turn": ctx.turn}


def _unavailable(ctx: TurnContext, name: str, tools: dict[str, Tool]) -> str:
    """Why a tool this turn does not offer cannot be called."""
    if name in ctx.withheld:
        return f"{name} is not available: its capability is held by a notice until the user releases it"
    if any(t.name == name and t.capability == "write" for t in WORKSPACE_TOOLS):
        return write_refusal(name)
    return f"unknown tool '{name}'; your tools are: {', '.join(sorted(tools))}"
