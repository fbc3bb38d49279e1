"""The run's state as it was at a post: rebuilt from the prefix of the logs (`rebuild.py`).

The prefix is the live posts up to SEQ, the events up to that post's effects (the next `post`
or `scheduled` event ends them) less those of superseded turns, and the harness log. From it come
the cursors, the open question or gate, approved gates, notices, a running wait, the talk and
audit counts and each participant's credited work and silent streak. What was spent is never
rewound: tokens, cost, turn counts, the turn number (turn ids stay unique) and the models'
figures are kept from the current state.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from autodev.records.state import Figures, PausedFrom, RunState
from autodev.rules.reasons import reason
from autodev.store import rebuild
from autodev.store.journal import JsonObject, iter_records
from autodev.store.paths import RunPaths
from autodev.store.thread import Thread, seq_of

KEEP = (  # field names
    "schema_",
    "version",
    "controls",
    "control_seq",
    "controls_applied",
    "run_id",
    "started_at",
    "base_head",
    "pid",
    "daemon",
    "sessions",
    "turn",
    "accounted_turn",
    "models",
    "audit_usage",
    "limited_until",
    "team_error",
    "config_refused",
)
REWOUND_FROM_PREFIX = ("credited", "silent_streak")


def prefix_records(
    paths: RunPaths, thread: Thread, to_seq: int
) -> tuple[list[JsonObject], list[JsonObject], list[JsonObject]]:
    live = thread.live
    posts = [p for p in iter_records(paths.thread) if seq_of(p) <= to_seq and live.is_live(seq_of(p))]
    dead_turns = {
        p.get("turn") for p in iter_records(paths.thread) if not live.is_live(seq_of(p)) and p.get("turn")
    }
    dead_seqs = {seq_of(p) for p in iter_records(paths.thread) if not live.is_live(seq_of(p))}
    events = events_upto(iter_records(paths.events), to_seq, dead_seqs, dead_turns)
    harness = list(iter_records(paths.harness_log)) if paths.harness_log.exists() else []
    return posts, events, harness


def events_upto(
    lines: Iterable[JsonObject],
    seq: int,
    dead_seqs: Collection[int] = (),
    dead_turns: Collection[object] = (),
) -> list[JsonObject]:
    """The events (as their lines: a fork copies them verbatim) up to post `seq`'s effects: up
    to the next scheduling after its copy, leaving out the copies of the posts `dead_seqs` and
    the events of the turns `dead_turns` (superseded by a rewind)."""
    from autodev.records.events import PostEvent, ScheduledEvent, parse

    out: list[JsonObject] = []
    seen_post = False
    for line in lines:
        match parse(line):
            case PostEvent(post=post):
                at = post.seq
                if at in dead_seqs:
                    continue
                if at > seq:
                    break
                seen_post = seen_post or at == seq
            case ScheduledEvent() if seen_post:
                break
            case _:
                pass  # every other kind is kept (or not) by its turn
        if line.get("turn") in dead_turns:
            continue
        out.append(line)
    return out


def rewound_state(
    cur: RunState, paths: RunPaths, thread: Thread, to_seq: int, note_seq: int, n: int, *, daemon: bool
) -> RunState:
    """`cur` as it was at post `to_seq`, spend kept; the rewind note `note_seq` is applied."""
    then = rebuild.from_records(*prefix_records(paths, thread, to_seq))
    kept = {k: getattr(cur, k) for k in KEEP if k in cur.model_fields_set}
    parts: dict[str, Figures] = {}
    for name, fig in cur.participants.items():
        was = then.participants.get(name)
        parts[name] = fig.but(**{k: getattr(was, k) if was else 0 for k in REWOUND_FROM_PREFIX})
    # The state the run was in at SEQ, held until the user continues it.
    at = PausedFrom(state="running", reason=None)
    if then.state in ("awaiting_user", "gated", "waiting"):
        at = PausedFrom(state=then.state, reason=then.reason)
    return (
        then.but(**kept)
        .without("rebuilt_from_logs")
        .but(
            warnings=[],
            participants=parts,
            applied_seq=note_seq,
            rewind_applied=n,
            speaking=None,
            next=None,
            audit_pending=None,
            recovered_turn=None,
            state="paused" if daemon else "stopped",
            reason=reason("rewound", seq=to_seq),
            paused_from=at,
        )
    )
