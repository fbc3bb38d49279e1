"""One tool call of a turn, from the model's call to the text it gets back.

Every call but `post` (which keeps its own intent records) is logged as `tool_started` (with its
effective arguments, whether it is safe to replay, and a before_tool hook's decision) before it
runs and `tool_finished` after. A call the model may not make (unknown, held by a notice,
refused by the gate guard or a hook, after the turn's post) is answered with why; a tool that
fails inside autodev ends the call, not the daemon.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeGuard

from autodev.errors import AutodevError, ToolError
from autodev.harness import credit
from autodev.harness.context import TurnToolEnv
from autodev.harness.hooks import HookDecision, decision
from autodev.harness.messages import ToolCall, arguments
from autodev.harness.recovery import CRASHED, INTERRUPTED, Began
from autodev.harness.registry import Tool, ToolEnv
from autodev.harness.thread_tools import POST, READ_THREAD, TELL_USER
from autodev.harness.tools import WORKSPACE_TOOLS, write_refusal
from autodev.records.events import ErrorEvent, ToolEvent, ToolInterruptedEvent
from autodev.records.harness_log import HookOutcome, ToolFinished, ToolStarted, json_args
from autodev.store.journal import JsonObject, is_object, safe_text

if TYPE_CHECKING:
    from autodev.harness.context import Toolbox, TurnContext, TurnResult, Who


def offered(box: Toolbox) -> dict[str, Tool[str]]:
    """The tools a turn with `box` offers the model, by name: the thread tools, then the workspace
    tools the participant may use, less those of capabilities a notice holds."""
    thread = [POST, READ_THREAD] + ([TELL_USER] if box.tell_user else [])
    tools = thread + [t for t in [*box.workspace.tools(), *box.extra] if t.name not in box.withheld]
    return {t.name: t for t in tools}


def resume_call(
    ctx: TurnContext, call: ToolCall, began: Began | None, baseline: credit.Baseline, result: TurnResult
) -> str:
    """A tool call of the last known model answer that has no logged result."""
    decided = decision(began.started.hook) if began else None
    if decided and decided["blocked"]:  # the hook's answer was recorded: not asked again
        return finish(ctx, call["id"], _blocked(decided))
    name = call["function"]["name"]
    crashes = began.crashes if began else 1
    if began is None or (began.started.replay_safe and crashes < 2) or name == "post":
        # Never started, or safe to run again (reads; a post is idempotent by its id). A read
        # in flight at the last two crashes is what crashes the daemon: not run a third time.
        return run_call(ctx, call, baseline, result, decided)
    text = INTERRUPTED if crashes < 2 else CRASHED
    ctx.record(
        ToolFinished(run=ctx.who.run_id, turn=ctx.who.turn, call_id=call["id"], result=text, synthetic=True)
    )
    ctx.emit(ToolInterruptedEvent(name=name, crashes=crashes))
    return text


def run_call(
    ctx: TurnContext,
    call: ToolCall,
    baseline: credit.Baseline,
    result: TurnResult,
    decided: HookDecision | None = None,
) -> str:
    """Run one call of the model's answer; the text the model gets. `decided`: the hook's
    decision recorded before a crash (a resumed call does not ask the hook again)."""
    name = call["function"]["name"]
    args = parse_arguments(name, arguments(call))
    if isinstance(args, str):
        return args
    env = TurnToolEnv(
        workspace=ctx.tools.workspace, turn=ctx, result=result, baseline=baseline, call_id=call["id"]
    )
    tools = offered(ctx.tools)
    if name == "post":  # it keeps its own intent records
        return POST.call(env, args)
    tool = tools.get(name)
    hook = None
    runs = tool is not None and (result.post is None or tool.capability == "thread")
    if ctx.tools.hooks and runs:
        # The effective outcome goes into tool_started: a resumed turn reuses it (`decided`).
        hook = decided or ctx.tools.hooks.before_tool(name, args, _hook_data(ctx.who))
        if hook:
            args = hook["args"]
    log_started(ctx, call["id"], name, args, bool(tool and tool.replay_safe), hook)
    if result.post is not None and not (tool and tool.capability == "thread"):
        out = "skipped: your turn ended with your post"
    elif hook and hook["blocked"]:
        out = _blocked(hook)
    else:
        out = dispatch(ctx, name, tool, tools, env, args)
        if ctx.tools.hooks and tool is not None:
            out = ctx.tools.hooks.after_tool(name, args, out, _hook_data(ctx.who))
    return finish(ctx, call["id"], out)


def parse_arguments(name: str, raw: str) -> JsonObject | str:
    """A call's arguments as the JSON object they must be, or the error the model reads."""
    if len(raw) > MAX_ARGS_CHARS:
        return (
            f"error: the arguments of {name} are {len(raw)} characters, more than the {MAX_ARGS_CHARS} a call "
            "may send; send less (write a large file in parts with edit_file)"
        )
    try:
        args: object = json.loads(raw)
        if not is_object(args):
            raise ValueError("arguments must be a JSON object")
        if _depth(args) > MAX_ARGS_DEPTH:
            raise ValueError(f"they nest deeper than {MAX_ARGS_DEPTH} levels")
    except RecursionError:
        return f"error: the arguments of {name} nest deeper than {MAX_ARGS_DEPTH} levels; send a flat JSON object"
    except ValueError as e:
        return f"error: the arguments of {name} are not valid JSON ({str(e)[:200]}); send a JSON object"
    return args


def log_started(
    ctx: TurnContext,
    call_id: str,
    name: str,
    args: Mapping[str, object],
    replay_safe: bool,
    hook: HookDecision | None = None,
) -> None:
    """The intent record of a call (the arguments it runs with) and its event."""
    rec = ToolStarted(
        run=ctx.who.run_id,
        turn=ctx.who.turn,
        call_id=call_id,
        name=name,
        args=json_args(args),
        replay_safe=replay_safe,
    )
    if hook:  # written only when a hook answered, as ever
        rec = rec.model_copy(
            update={"hook": HookOutcome(blocked=hook["blocked"], args=json_args(hook["args"]))}
        )
    ctx.record(rec)
    ctx.emit(ToolEvent(name=name))


# What one tool call may send (docs/security.md): a hostile or broken provider's arguments are
# refused before they reach a log, the state or a hook.
MAX_ARGS_CHARS = 4 * 1024 * 1024
MAX_ARGS_DEPTH = 32


def _depth(value: object) -> int:
    """How deep `value` nests (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        v, d = stack.pop()
        deepest = max(deepest, d)
        if d > MAX_ARGS_DEPTH:
            break
        if is_object(v):
            stack.extend((x, d + 1) for x in v.values())
        elif _is_list(v):
            stack.extend((x, d + 1) for x in v)
    return deepest


def dispatch(
    ctx: TurnContext,
    name: str,
    tool: Tool[str] | None,
    tools: dict[str, Tool[str]],
    env: ToolEnv,
    args: object,
) -> str:
    """What the tool returns, or the error the model reads: unavailable, refused by the gate
    guard, invalid arguments, or a failure inside autodev (a log that cannot be written still
    faults the run)."""
    try:
        if tool is None:
            raise ToolError(_unavailable(ctx.tools, name, tools))
        refusal = ctx.tools.guard(name) if ctx.tools.guard else None
        if refusal:
            raise ToolError(refusal)
        if ctx.tools.recorded is not None and tool.capability != "thread":
            return ctx.tools.recorded(ctx.who.turn, env.call_id or "", name)  # a replay: not run again
        return safe_text(str(tool.call(env, args)))
    except ToolError as e:
        return f"error: {e}"
    except AutodevError:
        raise  # a log that cannot be written: the run faults, as everywhere
    except Exception as e:  # a bug in a tool ends the call, not the daemon
        out = f"error: {name} failed inside autodev ({type(e).__name__}: {safe_text(str(e))[:300]})"
        ctx.emit(ErrorEvent(message=out))
        return out


def _is_list(value: object) -> TypeGuard[list[object]]:
    return isinstance(value, list)


def _blocked(hook: HookDecision) -> str:
    return f"blocked by a before_tool hook: {hook['blocked']}"


def finish(ctx: TurnContext, call_id: str, out: str) -> str:
    """The call's result record; `out` is what the model gets."""
    ctx.record(ToolFinished(run=ctx.who.run_id, turn=ctx.who.turn, call_id=call_id, result=out[:4000]))
    return out


def _hook_data(who: Who) -> JsonObject:
    return {"participant": who.name, "turn": who.turn}


def _unavailable(box: Toolbox, name: str, tools: dict[str, Tool[str]]) -> str:
    """Why a tool this turn does not offer cannot be called."""
    if name in box.withheld:
        return f"{name} is not available: its capability is held by a notice until the user releases it"
    if any(t.name == name and t.capability == "write" for t in WORKSPACE_TOOLS):
        return write_refusal(name)
    return f"unknown tool '{name}'; your tools are: {', '.join(sorted(tools))}"
