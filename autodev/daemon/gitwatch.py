"""What a turn did to git that the user must hear of, checked after every command and at the
turn's end (an agent CLI's commands are not seen one by one):

- files git would run or follow (`host/gitquarantine`) are moved to the run folder's
  `quarantine/<turn>-<n>/`, keeping their path in the repository, and named on the thread (a
  `system` note), in events (`git_quarantined`) and in the command's result;
- the run's branch moved to a commit whose history lacks the turn's starting commit (a direct
  write of `.git/refs/heads/main`, a reset, a rebase: commits dropped) is named on the thread
  with the commits it dropped (`branch_moved_back`). When history rewriting is gated
  (`gateRequired` matches `git update-ref <branch> <commit>` or `git reset --hard <commit>`)
  and no approved gate of the participant names one of them, the branch is put back where the
  turn began and the command's result says how to ask for the gate.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from autodev.config import RunConfig
from autodev.daemon.handles import Run
from autodev.daemon.recovery import last_turn_records
from autodev.guard import gates
from autodev.guard.shellwords import UnparseableCommand
from autodev.harness import credit
from autodev.host import gitquarantine, hostgit
from autodev.records.events import BranchMovedBackEvent, GateUsedEvent, GitQuarantinedEvent
from autodev.store.journal import is_object

# gateRequired patterns of commands that rewrite a branch: a command that matched one of them
# ran under an approved gate, so the move back it made stands.
REWRITES = tuple(
    f"git {sub}"
    for sub in (
        "reset",
        "rebase",
        "update-ref",
        "commit --amend",
        "filter-",
        "branch -",
        "replace",
        "pull",
        "cherry-pick",
    )
)


def quarantine(run: Run, name: str | None, turn: int) -> list[str]:
    """Move what git would run or follow out of the repository; the paths it moved."""
    root = run.paths.run_dir / "quarantine"
    n = 1 + sum(1 for d in (os.listdir(root) if root.is_dir() else []) if d.startswith(f"{turn}-"))
    dest = root / f"{turn}-{n}"
    moved = gitquarantine.sweep(run.paths.repo, dest)
    if not moved:
        return []
    lines = [f"- {m.path}: {m.why}" for m in moved]
    who = f"{name}'s turn {turn}" if name else f"turn {turn}"
    text = (
        f"{who} left files in the repository that git would run or follow; autodev moved them to "
        f"{dest} (your own git would have used them):\n" + "\n".join(lines)
    )
    run.events.emit(
        GitQuarantinedEvent(
            participant=name,
            turn=turn,
            paths=[m.path for m in moved],
            why=[m.why for m in moved],
            folder=str(dest),
        )
    )
    run.note("system", text, id=f"{run.run_id}:t{turn}:quarantine:{n}")
    return [m.path for m in moved]


def unnamed(run: Run) -> None:
    """A quarantine folder whose note a crash cut off (the move comes first: the safe side) is
    named now, at the daemon's start, from what it holds; a file still in the repository although
    a copy is in quarantine (a crash between copy and delete) is moved again."""
    root = run.paths.run_dir / "quarantine"
    if not root.is_dir():
        return
    again = False
    for folder in sorted(root.iterdir()):
        turn, _, n = folder.name.partition("-")
        files = sorted(str(f.relative_to(folder)) for f in folder.rglob("*") if f.is_file())
        for rel in files:  # a move across file systems a crash cut between copy and delete
            again |= (run.paths.repo / rel).exists() and gitquarantine.forget(run.paths.repo, rel)
        nid = f"{run.run_id}:t{turn}:quarantine:{n}"
        if not (turn.isdigit() and n.isdigit()) or run.thread.seen(nid) is not None:
            continue
        text = (
            f"turn {turn} left files in the repository that git would run or follow; autodev moved "
            f"them to {folder} before the daemon stopped:\n" + "\n".join(f"- {f}" for f in files)
        )
        run.note("system", text, id=nid)
    if again:
        quarantine(run, None, run.state.read().turn)


class GitWatch:
    """One turn's watch: `after_command` after each command (its result gets what it returns)
    and, with no command, at the turn's end."""

    def __init__(
        self,
        run: Run,
        config: RunConfig,
        name: str,
        turn: int,
        branch: str | None,
        baseline: Mapping[str, object] | None,
    ):
        """`branch`: the run's branch (state `branch`); `baseline`: a resumed turn's credit
        baseline, else the turn's own is read from its `turn_started` record when first needed."""
        self.run, self.config, self.name, self.turn = run, config, name, turn
        self._branch = branch
        self._baseline: Mapping[str, object] | None = baseline
        self._start: tuple[str | None, str | None] | None = None
        self.told: set[str | None] = set()  # tips a move stands at (named once)
        self.times = 0  # moves named in this turn (the notes' ids)

    def after_command(self, command: str | None = None) -> str:
        """What the command's result adds. `command` ran past the guard: when it matched a
        gateRequired pattern, an approved gate covered it, and a move back it made stands."""
        moved = quarantine(self.run, self.name, self.turn)
        said = [
            f"moved out of the repository, git would run or follow them: {', '.join(moved)}" if moved else ""
        ]
        said.append(self.moved_back(self._approved(command)))
        return "\n".join(s for s in said if s)

    def _approved(self, command: str | None) -> bool:
        if not command:
            return False
        rewrites = [p for p in self.config.gate_required if p.strip().startswith(REWRITES)]
        try:
            return bool(gates.required_parts(command, rewrites))
        except UnparseableCommand:
            return False  # refused by the guard unless a gate named it exactly; judged below

    def moved_back(self, approved: bool = False) -> str:
        """ "" unless the branch lost commits of the turn's start; then the note is made.
        `approved`: the command that moved it was covered by an approved gate."""
        repo = self.run.paths.repo
        branch, start = self.start_of()
        if not branch or not start:
            return ""
        tip = credit.branch_tip(repo, branch)
        if tip == start or (tip is not None and credit.holds(repo, start, tip)) or tip in self.told:
            return ""
        self.times += 1
        lost = credit.dropped(repo, start, tip)
        short = branch.removeprefix("refs/heads/")
        gated, gate_ids = self._gated(short, tip)
        if approved:
            gated, gate_ids = False, []
        restored = False
        if gated and not gate_ids:
            args = ["update-ref", "-m", "autodev: put back", branch, start]
            restored = hostgit.run(repo, *args, *([tip] if tip else []), check=False).returncode == 0
        elif gate_ids:
            self._use(gate_ids)
        where = f"to {tip[:12]}" if tip else "away (deleted)"
        listing = "\n".join(f"- {c}" for c in lost) or "- (none listed)"
        text = f"{self.name} moved branch {short} {where}, dropping {len(lost)} commit(s) it held at the turn's start:\n{listing}"
        if restored:
            text += (
                f"\nHistory rewriting is gated (gateRequired), so autodev put {short} back to {start[:12]}."
            )
        elif gated and not gate_ids:
            text += f"\nHistory rewriting is gated, and autodev could not put {short} back to {start[:12]}."
        self.run.events.emit(
            BranchMovedBackEvent(
                participant=self.name,
                turn=self.turn,
                branch=short,
                start=start,
                to=tip,
                dropped=lost,
                restored=restored,
            )
        )
        self.run.note("system", text, id=f"{self.run.run_id}:t{self.turn}:branch:{self.times}")
        if not restored:
            self.told.add(tip)
            return text
        return (
            text + "\nTo drop those commits, post kind=gate whose text names the exact command "
            f"(`git reset --hard {(tip or '')[:40]}`) and run it once the gate is approved."
        )

    def _gated(self, short: str, tip: str | None) -> tuple[bool, list[str]]:
        """(whether the move needs a gate, the approved gate that covers it if any)."""
        forms = [
            f"git update-ref refs/heads/{short} {tip or ''}".strip(),
            f"git reset --hard {tip or ''}".strip(),
        ]
        try:
            gated = any(gates.required_parts(f, self.config.gate_required) for f in forms)
        except UnparseableCommand:
            gated = True
        if not gated:
            return False, []
        approved = [g.dump() for g in self.run.state.read().approved_gates if g.declarer == self.name]
        for f in forms:
            refusal, used = gates.guard(f, self.config.gate_required, approved)
            if refusal is None and used:
                return True, used
        return True, []

    def _use(self, ids: list[str]) -> None:
        self.run.state.update(
            lambda s: s.changed(approved_gates=[g for g in s.approved_gates if g.id not in ids])
        )
        self.run.events.emit(GateUsedEvent(participant=self.name, ids=ids))

    def start_of(self) -> tuple[str | None, str | None]:
        """(the run's branch, its commit at the turn's start), from the turn's credit baseline:
        the one `git status` the turn took as it began (issue 33: no git process of its own)."""
        if self._start is None:
            baseline = self._baseline
            if baseline is None:
                recs = last_turn_records(self.run.paths.harness_log)[0]
                if recs and recs[0].get("turn") == self.turn:
                    found = recs[0].get("baseline")
                    baseline = found if is_object(found) else None
            self._start = start_of(self.run.paths.repo, self._branch, baseline)
        return self._start


def start_of(
    repo: Path, branch: str | None, baseline: Mapping[str, object] | None
) -> tuple[str | None, str | None]:
    """(the run's branch, its commit at the turn's start): from the turn's baseline, else (a
    turn that recorded none) asked of git."""
    if baseline is not None:
        was, head = baseline.get("branch"), baseline.get("head")
        return (was if isinstance(was, str) and was else branch), (head if isinstance(head, str) else None)
    branch = branch or credit.current_branch(repo)
    return branch, credit.branch_tip(repo, branch) if branch else None
