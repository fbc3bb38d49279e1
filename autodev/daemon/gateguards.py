"""The gates a turn's commands and tool calls pass: gateRequired commands (and, for a
read-only participant running unsandboxed, the git commands that change the branch or the
working tree) and gateRequiredTools tools are refused unless an approved gate of the
participant covers them; each approval covers one use."""

from __future__ import annotations

from collections.abc import Callable

from autodev.config import RunConfig
from autodev.daemon.handles import Run
from autodev.records.events import CommandRefusedEvent, GateUsedEvent, ToolRefusedEvent

# What a participant with write = false may not run when no sandbox mounts the repository
# read-only for it: git commands that move the branch or change the working tree.
READ_ONLY_GATED = [
    f"git {sub}*"
    for sub in (
        "reset", "checkout", "restore", "switch", "stash", "clean", "commit", "merge", "rebase",
        "am", "apply", "cherry-pick", "revert", "rm", "mv", "add", "update-ref", "branch -",
        "tag", "pull", "fetch", "worktree", "filter-branch", "replace", "notes", "gc", "prune",
    )
]  # fmt: skip


def command_guard(
    run: Run, config: RunConfig, name: str, *, read_only: bool = False
) -> Callable[[str], str | None]:
    """Refuse gateRequired commands unless an approved gate of `name` covers them. `read_only`:
    a participant with write = false whose commands run unsandboxed also needs a gate for the
    git commands that change the branch or the working tree (READ_ONLY_GATED)."""
    from autodev.guard import gates

    patterns = [*config.gate_required, *(READ_ONLY_GATED if read_only else [])]

    def guard(command: str) -> str | None:
        st = run.state.read()
        approved = [g.dump() for g in st.approved_gates if g.declarer == name]
        refusal, used = gates.guard(
            command,
            patterns,
            approved,
            opaque=config.gate_opaque,
            written=gates.written_since(run.paths.repo, st.started_at),
        )
        if refusal:
            run.events.emit(CommandRefusedEvent(participant=name, command=command[:300]))
            return refusal
        use_gates(run, name, used)
        return None

    return guard


def tool_guard(run: Run, config: RunConfig, name: str) -> Callable[[str], str | None]:
    """Refuse a gateRequiredTools tool unless an approved gate of `name` names it."""
    from autodev.guard import gates

    def guard(tool: str) -> str | None:
        if not config.gate_required_tools:
            return None
        approved = [g.dump() for g in run.state.read().approved_gates if g.declarer == name]
        refusal, used = gates.tool_guard(tool, config.gate_required_tools, approved)
        if refusal:
            run.events.emit(ToolRefusedEvent(participant=name, name=tool))
            return refusal
        use_gates(run, name, used)
        return None

    return guard


def use_gates(run: Run, name: str, used: list[str]) -> None:
    """Each approval covers one use: the gates a command or tool call used are spent."""
    if not used:
        return
    run.state.update(lambda s: s.changed(approved_gates=[g for g in s.approved_gates if g.id not in used]))
    run.events.emit(GateUsedEvent(participant=name, ids=used))
