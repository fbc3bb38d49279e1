"""`autodev pick [K] [--apply]`: the group's runs ranked by `rank` (no model), the winner and why;
`--apply` merges the chosen run's kept ref into the user's branch: a fast-forward or a clean
merge, else a named refusal that leaves the branch as it was. Every run's work stays on
`refs/autodev/best-of/<group>/<k>`; nothing is deleted here."""

from __future__ import annotations

from dataclasses import dataclass

from autodev.errors import UsageError
from autodev.group import facts
from autodev.group.rank import Candidate, ranked, reason
from autodev.group.record import Group, GroupError, append
from autodev.host import hostgit
from autodev.records.group import Applied, ApplyStarted


class MergeRefused(UsageError):
    """The chosen run's work does not merge cleanly into the user's branch (exit 2)."""


@dataclass
class Pick:
    group: Group
    rows: list[facts.RunFacts]  # every run, by number
    order: list[int]  # the ended runs, best first
    why: str

    @property
    def winner(self) -> int | None:
        return self.order[0] if self.order else None

    def to_json(self) -> dict[str, object]:
        return {
            "group": self.group.id,
            "base": self.group.base,
            "runs": [r.to_json() for r in self.rows],
            "order": self.order,
            "winner": self.winner,
            "reason": self.why,
            "applied": self.group.applied.dump() if self.group.applied else None,
        }


def candidate(r: facts.RunFacts) -> Candidate:
    return Candidate(r.k, r.pass_to_fail, r.fail_to_pass, r.audit, r.changed_lines, r.cost)


def rank_group(g: Group) -> Pick:
    rows = facts.of_group(g)
    order = ranked([candidate(r) for r in rows if r.ended and r.ref])
    return Pick(g, rows, [c.k for c in order], reason(order))


def apply(p: Pick, k: int | None) -> str:
    """Merge run `k` (default: the winner) into the user's branch; what was done, one line."""
    g = p.group
    going = [r.k for r in p.rows if not r.ended]
    if k is None:
        if going:
            raise GroupError(
                f"runs {', '.join(map(str, going))} of group {g.id} have not ended: the pick is not final",
                "wait for them (`autodev status`), stop them (`autodev stop` in their worktree), "
                "or name the run to apply: `autodev pick K --apply`",
            )
        k = p.winner
    if k is None or k not in p.order:
        raise GroupError(
            f"run {k} of group {g.id} has not ended with work to apply",
            "`autodev pick` lists the runs that can be applied",
        )
    ended = g.members[k].ended
    sha = (ended.head if ended else None) or ""
    repo = g.repo
    branch = hostgit.run(repo, "symbolic-ref", "-q", "--short", "HEAD", check=False).stdout.strip()
    if not branch:
        raise MergeRefused(
            f"{repo} has a detached HEAD: there is no branch to merge run {k} into",
            f"check out your branch (`git switch {g.branch or 'main'}`), then `autodev pick {k} --apply`",
        )
    append(g.folder, ApplyStarted(id=f"apply:{k}", type="apply", k=k, branch=branch, sha=sha))
    if hostgit.run(repo, "merge-base", "--is-ancestor", sha, "HEAD", check=False).returncode == 0:
        how = "already in"
    elif hostgit.run(repo, "merge-base", "--is-ancestor", "HEAD", sha, check=False).returncode == 0:
        r = hostgit.run(repo, "merge", "-q", "--ff-only", sha, check=False)
        if r.returncode != 0:
            raise MergeRefused(
                f"run {k} cannot be fast-forwarded onto {branch}: {_said(r)}",
                "commit or put aside your changes to the files it names (`git status`), then apply again",
            )
        how = "fast-forward"
    else:
        msg = f"autodev: best-of group {g.id}, run {k}"
        r = hostgit.run(repo, "merge", "-q", "--no-ff", "--no-edit", "-m", msg, sha, check=False)
        if r.returncode != 0:
            conflicts = hostgit.run(
                repo, "diff", "--name-only", "--diff-filter=U", check=False
            ).stdout.split()
            hostgit.run(repo, "merge", "--abort", check=False)
            raise MergeRefused(
                f"run {k} does not merge cleanly into {branch}"
                + (f": conflicts in {', '.join(conflicts)}" if conflicts else f": {_said(r)}")
                + "; the branch is as it was",
                f"merge it by hand (`git merge {g.ref_of(k)}`), or apply another run (`autodev pick K --apply`)",
            )
        how = "merge"
    head = hostgit.run(repo, "rev-parse", "HEAD").stdout.strip()
    append(g.folder, Applied(id="applied", type="applied", k=k, branch=branch, how=how, head=head))
    return f"run {k} applied to {branch} ({how}); its work stays on {g.ref_of(k)}"


def _said(r: object) -> str:
    err = getattr(r, "stderr", "") or getattr(r, "stdout", "")
    return " ".join(str(err).split())[:400] or "git refused"
