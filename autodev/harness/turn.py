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
from autodev.errors import PostRefused, ProviderError, ToolError
from autodev.harness import providers
from autodev.harness.recovery import INTERRUPTED, Resume
from autodev.harness.tools import REPLAY_SAFE, Workspace
from autodev.moves import MOVES, check_post

READ_PAGE = 20
POST_TOOL = {
    "type": "function",
    "function": {
        "name": "post",
        "description": "Make your one move for this turn; your first accepted post ends the turn.",
        "parameters": {
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": list(MOVES)},
                "text": {"type": "string", "description": "What you say on the thread."},
                "handoff": {
                    "type": "string",
                    "description": 'Who speaks next: a participant\'s name, or "user" (only with kind say).',
                },
            },
            "required": ["kind", "text"],
        },
    },
}
TELL_USER_TOOL = {
    "type": "function",
    "function": {
        "name": "tell_user",
        "description": "Raise a notice for the human (not a move; at most one per turn). Their answer "
        'reaches you in a later turn. `hold` names a capability (e.g. "browser") '
        "you give up until they release it.",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string"}, "hold": {"type": "string"}},
            "required": ["text"],
        },
    },
}
READ_THREAD_TOOL = {
    "type": "function",
    "function": {
        "name": "read_thread",
        "description": f"Full text of thread posts from_seq..to_seq (at most {READ_PAGE} per call).",
        "parameters": {
            "type": "object",
            "properties": {"from_seq": {"type": "integer"}, "to_seq": {"type": "integer"}},
            "required": ["from_seq"],
        },
    },
}


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
    tell_user: Callable[[str, str | None], str] | None = None  # raises a notice; returns its id


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


def _tool_specs(ctx: TurnContext) -> list[dict]:
    thread_tools = [POST_TOOL, READ_THREAD_TOOL] + ([TELL_USER_TOOL] if ctx.tell_user else [])
    return thread_tools + [t for t in ctx.workspace.specs() if t["function"]["name"] not in ctx.withheld]


def tool_names(ctx: TurnContext) -> list[str]:
    return [t["function"]["name"] for t in _tool_specs(ctx)]


def _read_thread(ctx: TurnContext, args: dict) -> str:
    try:
        start = int(args["from_seq"])
        end = int(args.get("to_seq") or start + READ_PAGE - 1)
    except (KeyError, TypeError, ValueError):
        raise ToolError("read_thread needs from_seq (an integer) and optionally to_seq") from None
    start = max(1, start)
    posts = ctx.thread.read(start, end, limit=READ_PAGE)
    if not posts:
        return f"no posts in {start}..{end} (the thread has {ctx.thread.last_seq})"
    out = []
    for p in posts:
        arrow = f" → {p['handoff']}" if p.get("handoff") else ""
        out.append(f"#{p['seq']} {p['from']} [{p['kind']}{arrow}] {p['ts']}\n{p['text']}")
    more = posts[-1]["seq"] < min(end, ctx.thread.last_seq)
    if more:
        out.append(f"(more: read_thread(from_seq={posts[-1]['seq'] + 1}, to_seq={end}))")
    return "\n\n".join(out)


def _generate(ctx: TurnContext, messages: list[dict], step: int, attempt: int = 0) -> providers.Generation:
    """One model request, with failover on usage limits and backoff on transient errors.
    `attempt` counts the attempts already made (it survives restarts via the harness log)."""
    while True:
        usable = [t for t in ctx.targets if ctx.limited_until.get(t.label, 0) <= time.time()]
        if not usable:
            reset = min(ctx.limited_until.get(t.label, 0) for t in ctx.targets)
            raise AllModelsLimited(reset, f"every model of {ctx.name} is at its usage limit")
        target = usable[0]
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
                _tool_specs(ctx),
                turn_id=f"{ctx.run_id}:{ctx.turn}",
                timeout=ctx.timeout_sec,
            )
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


def _post(ctx: TurnContext, args: dict, baseline: credit.Baseline) -> dict:
    move = check_post(
        args, author=ctx.name, can_write=ctx.can_write, team=ctx.team_writers, restricted=ctx.restricted
    )
    extra = {}
    if move.kind == "work_done":
        extra["credit"] = credit.credit_since(ctx.repo, baseline)
    pid = f"{ctx.run_id}:t{ctx.turn}:post"
    ctx.hlog.append({"type": "post_started", "run": ctx.run_id, "turn": ctx.turn, "id": pid + ":intent"})
    rec = ctx.thread.append(ctx.name, move.kind, move.text, move.handoff, id=pid, turn=ctx.turn, **extra)
    ctx.hlog.append({"type": "post_committed", "run": ctx.run_id, "turn": ctx.turn, "seq": rec["seq"]})
    ctx.events.emit("post", **{("post_id" if k == "id" else k): v for k, v in rec.items() if k != "ts"})
    return rec


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
        nudged, attempts = False, 0
    else:
        baseline = credit.baseline_from_json(resume.baseline)
        messages, nudged, attempts = resume.messages, resume.nudged, resume.attempts
        result.steps, result.told = resume.steps, resume.told
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
        if result.steps >= ctx.max_steps:
            result.reason = f"reached maxStepsPerTurn ({ctx.max_steps}) without a post"
            break
        if time.monotonic() - started > ctx.timeout_sec:
            result.reason = "turn ran past turnTimeoutMin without a post"
            break
        step = result.steps + 1
        gen = _generate(ctx, messages, step, attempts)
        attempts = 0
        result.steps = step
        result.prompt_tokens += gen.prompt_tokens
        result.completion_tokens += gen.completion_tokens
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
                "prompt_tokens": gen.prompt_tokens,
                "completion_tokens": gen.completion_tokens,
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
            cost=gen.cost,
        )
        messages.append(gen.message)
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
    if began is None or began.get("replay_safe") or call["function"]["name"] == "post":
        # Never started, or safe to run again (reads; a post is idempotent by its id).
        return _run_call(ctx, call, baseline, result)
    ctx.hlog.append(
        {
            "type": "tool_finished",
            "run": ctx.run_id,
            "turn": ctx.turn,
            "call_id": call["id"],
            "result": INTERRUPTED,
            "synthetic": True,
        }
    )
    ctx.events.emit("tool_interrupted", participant=ctx.name, turn=ctx.turn, name=call["function"]["name"])
    return INTERRUPTED


def _run_call(ctx: TurnContext, call: dict, baseline: credit.Baseline, result: TurnResult) -> str:
    name = call["function"]["name"]
    try:
        args = json.loads(call["function"].get("arguments") or "{}")
        if not isinstance(args, dict):
            raise ValueError("arguments must be a JSON object")
    except ValueError as e:
        return f"error: the arguments of {name} are not valid JSON ({e}); send a JSON object"
    if name == "post":
        if result.post is not None:
            return "refused: you already posted this turn; a turn has exactly one post"
        try:
            result.post = _post(ctx, args, baseline)
        except PostRefused as e:
            return f"refused: {e}"
        return f"posted as #{result.post['seq']}; your turn is over"
    if name == "tell_user":
        return _tell_user(ctx, call, args, result)
    safe = name in REPLAY_SAFE or name == "read_thread"
    ctx.hlog.append(
        {
            "type": "tool_started",
            "run": ctx.run_id,
            "turn": ctx.turn,
            "call_id": call["id"],
            "name": name,
            "args": args,
            "replay_safe": safe,
        }
    )
    ctx.events.emit("tool", participant=ctx.name, turn=ctx.turn, name=name)
    if result.post is not None:
        out = "skipped: your turn ended with your post"
    else:
        try:
            if name in ctx.withheld:
                raise ToolError(
                    f"{name} is not available: its capability is held by a notice until the user releases it"
                )
            out = _read_thread(ctx, args) if name == "read_thread" else ctx.workspace.call(name, args)
        except ToolError as e:
            out = f"error: {e}"
    ctx.hlog.append(
        {
            "type": "tool_finished",
            "run": ctx.run_id,
            "turn": ctx.turn,
            "call_id": call["id"],
            "result": out[:4000],
        }
    )
    return out


def _tell_user(ctx: TurnContext, call: dict, args: dict, result: TurnResult) -> str:
    if ctx.tell_user is None:
        return "error: tell_user is not available"
    if result.told:
        return "refused: tell_user was already used this turn (at most one notice per turn)"
    text, hold = args.get("text"), args.get("hold")
    if not isinstance(text, str) or not text.strip():
        return "error: tell_user needs text (a non-empty string)"
    if hold is not None and not isinstance(hold, str):
        return 'error: hold must be a capability name such as "browser"'
    ctx.hlog.append(
        {
            "type": "tool_started",
            "run": ctx.run_id,
            "turn": ctx.turn,
            "call_id": call["id"],
            "name": "tell_user",
            "args": args,
            "replay_safe": False,
        }
    )
    try:
        nid = ctx.tell_user(text.strip(), hold or None)
        result.told = True
        out = f"notice {nid} raised; the user's answer will reach you in a later turn"
    except ToolError as e:
        out = f"error: {e}"
    ctx.hlog.append(
        {"type": "tool_finished", "run": ctx.run_id, "turn": ctx.turn, "call_id": call["id"], "result": out}
    )
    return out
