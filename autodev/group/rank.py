"""The pick, pure and deterministic (SPEC §23): no model is called. Rules, in order:

1. no `pass_to_fail` (a run whose tests could not say counts after one that broke none and
   before one that broke some);
2. most `fail_to_pass`;
3. audit accepted;
4. fewest changed lines;
5. lowest cost;

and, all equal, the lowest run number. The reason names the first rule that separated the
winner from the runner-up. `eval --best-of` ranks with the same function."""

from __future__ import annotations

from dataclasses import dataclass

RULES = ("no pass_to_fail", "most fail_to_pass", "audit accepted", "fewest changed lines", "lowest cost")


@dataclass(frozen=True)
class Candidate:
    k: int
    pass_to_fail: int | None  # None: no evidence (no done, or tests that could not run)
    fail_to_pass: int | None
    audit: str  # accepted | reopened | none
    changed_lines: int | None
    cost: float


def key(c: Candidate) -> tuple[int, int, int, int, float, int]:
    broke = 1 if c.pass_to_fail is None else (2 if c.pass_to_fail > 0 else 0)
    return (
        broke,
        -(c.fail_to_pass or 0),
        0 if c.audit == "accepted" else 1,
        c.changed_lines if c.changed_lines is not None else 1 << 40,
        round(c.cost, 6),
        c.k,
    )


def ranked(cands: list[Candidate]) -> list[Candidate]:
    return sorted(cands, key=key)


def _said(c: Candidate, rule: int) -> str:
    if rule == 0:
        return "no evidence" if c.pass_to_fail is None else f"{c.pass_to_fail} broke"
    if rule == 1:
        return f"{c.fail_to_pass or 0} now pass"
    if rule == 2:
        return f"audit {c.audit}"
    if rule == 3:
        return "no diff" if c.changed_lines is None else f"{c.changed_lines} lines changed"
    return f"${c.cost:.4f}"


def reason(order: list[Candidate]) -> str:
    """Why the first of `order` won, in one sentence."""
    if not order:
        return "no run has ended"
    win = order[0]
    if len(order) == 1:
        return f"run {win.k} is the only run that ended"
    second = order[1]
    a, b = key(win), key(second)
    for i, name in enumerate(RULES):
        if a[i] != b[i]:
            return (
                f"run {win.k} wins on rule {i + 1} ({name}): {_said(win, i)} against "
                f"{_said(second, i)} for run {second.k}"
            )
    return f"runs {win.k} and {second.k} are equal on every rule; the lower run number wins"
