"""The evidence of a `done` post (SPEC §22): what the project's own tests said, at the run's base
commit and at the head plus working tree, computed by autodev in the sandbox.

Written to the run folder (`evidence/done-<seq>.json`) and as an `evidence` event before the
audit decides; the audit's verdict note and the runs index carry its `summary()`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from autodev.records.base import Open

Outcome = Literal["ran", "no_tests", "timeout", "error"]
Status = Literal["passed", "failed", "skipped"]  # per test, as a machine format reports it

SHOWN_IDS = 3  # test ids named in a one-line summary


class TestRun(Open):
    """One run of the test command in a scratch copy of the repository (cached in the run folder
    by the tree it ran on and the command)."""

    __test__ = False  # not a pytest test class

    outcome: Outcome
    results: dict[str, Status] = {}  # test id -> status
    seconds: float = 0.0
    reason: str = ""  # why the outcome is timeout or error (or why no tests were found)


class Evidence(Open):
    """The classification of one `done` post's change by the project's tests."""

    command: str
    chosen: Literal["config", "detected"] = "config"  # testCommand given, or detected
    outcome: Outcome
    fail_to_pass: list[str] = []
    pass_to_fail: list[str] = []
    pass_to_pass: list[str] = []
    still_failing: list[str] = []
    tests_changed: list[str] = []  # test files the run changed
    # of fail_to_pass: tests that pass on the base's code with the run's test files too, so they
    # do not show the code change (a third run; empty when it was not needed or gave no answer)
    pass_without_code: list[str] = []
    code_changed: list[str] = []  # other files the run changed (docs excepted)
    base: str | None = None  # the base commit the first run used
    base_sec: float = 0.0
    head_sec: float = 0.0
    without_code_sec: float = 0.0
    base_cached: bool = False
    reason: str = ""  # why the tests could not run (timeout, error)

    def counts(self) -> dict[str, int]:
        """The figures shown where people look (status, the audit span, the runs index)."""
        return {
            "fail_to_pass": len(self.fail_to_pass),
            "pass_to_fail": len(self.pass_to_fail),
            "pass_to_pass": len(self.pass_to_pass),
            "still_failing": len(self.still_failing),
            "tests_changed": len(self.tests_changed),
            "pass_without_code": len(self.pass_without_code),
        }

    def by_the_code(self) -> list[str]:
        """The tests that newly pass because of the run's code change."""
        without = set(self.pass_without_code)
        return [t for t in self.fail_to_pass if t not in without]

    def summary(self) -> str:
        """One short line: `✔ 3 now pass, 0 broke`, `✘ 1 broke: tests/test_x.py::test_y`."""
        if self.outcome == "no_tests":
            return "no tests found"
        if self.outcome != "ran":
            return f"✘ tests could not run ({self.outcome})"
        if self.pass_to_fail:
            return f"✘ {len(self.pass_to_fail)} broke: {_ids(self.pass_to_fail)}"
        if not self.fail_to_pass and self.code_changed:
            return "✘ 0 now pass, 0 broke"
        if not self.by_the_code() and self.code_changed:
            return f"✘ {len(self.fail_to_pass)} now pass without the code change, 0 broke"
        if self.only_tests():
            return f"✘ only tests changed ({len(self.fail_to_pass)} now pass)"
        return f"✔ {len(self.fail_to_pass)} now pass, 0 broke"

    def only_tests(self) -> bool:
        """The run changed tests and no code (docs aside): whatever newly passes, passes because
        the tests changed, since the code they test is the base's (decision in docs/evidence.md)."""
        return bool(self.tests_changed) and not self.code_changed

    def gaps(self) -> list[str]:
        """Why `doneEvidence = "required"` reopens this done; empty: it goes to the audit."""
        if self.outcome == "no_tests":
            return []  # said once, never reopened for it
        if self.outcome != "ran":
            return [f"the tests could not run ({self.outcome}): {self.reason}".rstrip(": ")]
        out: list[str] = []
        if self.pass_to_fail:
            out.append(f"{len(self.pass_to_fail)} test(s) broke: {_ids(self.pass_to_fail, 10)}")
        if not self.fail_to_pass and self.code_changed:
            still = f" (still failing: {_ids(self.still_failing, 10)})" if self.still_failing else ""
            out.append("no test newly passes, and the run changed code" + still)
        elif not self.by_the_code() and self.code_changed:
            out.append(
                "no test newly passes because of the code change: "
                f"{_ids(self.pass_without_code, 10)} pass on the base's code with the run's tests too"
            )
        if self.only_tests():
            now = f"; newly passing: {_ids(self.fail_to_pass, 10)}" if self.fail_to_pass else ""
            out.append(
                f"the run changed only tests ({_ids(self.tests_changed, 10)}) and no code, so no test "
                f"shows the code fixed{now}"
            )
        return out


def _ids(ids: list[str], n: int = SHOWN_IDS) -> str:
    more = f" and {len(ids) - n} more" if len(ids) > n else ""
    return ", ".join(ids[:n]) + more


class EvidenceNote(Open):
    """What the verdict note and the runs index carry: the summary and the counts."""

    summary: str
    outcome: Outcome
    command: str
    counts: dict[str, int] = Field(default_factory=dict)

    @classmethod
    def of(cls, ev: Evidence) -> EvidenceNote:
        return cls(summary=ev.summary(), outcome=ev.outcome, command=ev.command, counts=ev.counts())
