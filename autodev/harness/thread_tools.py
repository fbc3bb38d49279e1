"""The thread tools every participant has: `post` (its one move), `read_thread`, `tell_user`.

Declared in the tool registry like the workspace tools; their handlers act on the turn
(``env.turn``, ``env.result``, ``env.baseline``).
"""

from __future__ import annotations

from pydantic import Field

from autodev.errors import PostRefused, ToolError
from autodev.harness import credit
from autodev.harness.context import TurnToolEnv
from autodev.harness.registry import Args, Integer, String, Tool
from autodev.records.base import Move
from autodev.records.harness_log import PostCommitted, PostStarted
from autodev.rules.moves import MOVES, check_post
from autodev.store.paths import git_head

READ_PAGE = 20


class PostArgs(Args):
    kind: Move = Field(description="Your move: " + ", ".join(MOVES) + ".")
    text: str = Field(description="What you say on the thread.")
    handoff: str | None = Field(
        default=None, description='Who speaks next: a participant\'s name, or "user" (only with kind say).'
    )


class ReadThreadArgs(Args):
    from_seq: Integer = Field(description="first post to read (its #seq)")
    to_seq: Integer | None = Field(
        default=None, ge=0, description=f"last post to read; default from_seq + {READ_PAGE - 1}"
    )


class TellUserArgs(Args):
    text: String = Field(description="what the human should know or do")
    hold: String | None = Field(
        default=None, description='a capability (e.g. "browser") you give up until the user releases it'
    )


def post(env: TurnToolEnv, **args: object) -> str:
    """Check the move (SPEC §4) and append it once, by its provisioned id."""
    ctx, result = env.turn, env.result
    if result.post is not None:
        return "refused: you already posted this turn; a turn has exactly one post"
    try:
        draft = check_post(
            args,
            author=ctx.who.name,
            can_write=ctx.who.can_write,
            team=ctx.who.team_writers,
            restricted=ctx.limits.restricted,
        )
    except PostRefused as e:
        return f"refused: {e}"
    hook_data = {"participant": ctx.who.name, "turn": ctx.who.turn}
    if ctx.tools.hooks:
        why = ctx.tools.hooks.before_post(draft, hook_data)
        if why:
            return f"refused by a before_post hook: {why}"
    credit_note: dict[str, object] = {}
    if draft.kind == "work_done":
        if env.baseline is None:
            raise ToolError("post: this turn has no baseline to credit work_done against")
        credit_note["credit"] = credit.credit_since(ctx.who.repo, env.baseline)
    pid = f"{ctx.who.run_id}:t{ctx.who.turn}:post"
    ctx.record(PostStarted(run=ctx.who.run_id, turn=ctx.who.turn, id=pid + ":intent"))
    # `head`: the commit `autodev rewind` to this post goes back to
    posted = ctx.logs.thread.append(
        draft.noted(id=pid, turn=ctx.who.turn, **credit_note, head=git_head(ctx.who.repo))
    )
    ctx.record_later(
        PostCommitted(run=ctx.who.run_id, turn=ctx.who.turn, seq=posted.seq)
    )  # the post itself is fsynced
    ctx.logs.events.posted(posted)
    result.post = posted
    if ctx.tools.hooks:
        ctx.tools.hooks.after_post(posted, hook_data)
    return f"posted as #{posted.seq}; your turn is over"


def read_thread(env: TurnToolEnv, from_seq: int, to_seq: int | None) -> str:
    thread = env.turn.logs.thread
    start = max(1, from_seq)
    end = to_seq or from_seq + READ_PAGE - 1
    posts = thread.read(start, end, limit=READ_PAGE)
    if not posts:
        return f"no posts in {start}..{end} (the thread has {thread.last_seq})"
    out: list[str] = []
    for p in posts:
        arrow = f" → {p.handoff}" if p.handoff else ""
        out.append(f"#{p.seq} {p.from_} [{p.kind}{arrow}] {p.ts}\n{p.text}")
    if posts[-1].seq < min(end, thread.last_seq):
        out.append(f"(more: read_thread(from_seq={posts[-1].seq + 1}, to_seq={end}))")
    return "\n\n".join(out)


def tell_user(env: TurnToolEnv, text: str, hold: str | None) -> str:
    ctx, result = env.turn, env.result
    if ctx.tools.tell_user is None:
        raise ToolError("tell_user is not available")
    if result.told:
        return "refused: tell_user was already used this turn (at most one notice per turn)"
    if not text.strip():
        raise ToolError("tell_user needs text (a non-empty string)")
    nid = ctx.tools.tell_user(text.strip(), hold or None)
    result.told = True
    return f"notice {nid} raised; the user's answer will reach you in a later turn"


# `post` writes its own intent records (post_started, post_committed) and checks its own
# arguments with the refusals of SPEC §4; the model gives the provider its schema.
POST = Tool(
    "post",
    "Make your one move for this turn; your first accepted post ends the turn.",
    "thread",
    post,
    args=PostArgs,
    own_checks=True,
)
READ_THREAD = Tool(
    "read_thread",
    f"Full text of thread posts from_seq..to_seq (at most {READ_PAGE} per call).",
    "thread",
    read_thread,
    args=ReadThreadArgs,
    replay_safe=True,
)
TELL_USER = Tool(
    "tell_user",
    "Raise a notice for the human (not a move; at most one per turn). Their answer "
    'reaches you in a later turn. `hold` names a capability (e.g. "browser") '
    "you give up until they release it.",
    "thread",
    tell_user,
    args=TellUserArgs,
)
THREAD_TOOLS: tuple[Tool[str], ...] = (POST, READ_THREAD, TELL_USER)
