"""`python3 -m unittest [args]` that also writes each test's outcome as JUnit XML to
$AUTODEV_JUNIT: how autodev reads per-test results of a repository tested with the standard
library's unittest (SPEC §22), which writes no machine format of its own.

Never imported by autodev: evidence.py copies this file into the scratch copy and the sandbox's
own python3 runs it there. So it uses the standard library only and runs on Python 3.8 and later.
"""

from __future__ import annotations

import os
import sys
import unittest
from typing import TYPE_CHECKING
from xml.sax.saxutils import quoteattr

if TYPE_CHECKING:  # annotations only: never evaluated, so this file still runs on Python 3.8
    from types import TracebackType

    _Err = tuple[type[BaseException], BaseException, TracebackType] | tuple[None, None, None]


class _Recording(unittest.TextTestResult):
    """The text result unittest prints, plus (test id, status) for each test, in order."""

    cases: list[tuple[str, str]]

    def startTestRun(self) -> None:  # noqa: N802 - unittest's name
        super().startTestRun()
        self.cases = []

    def addSuccess(self, test: unittest.TestCase) -> None:  # noqa: N802 - unittest's name
        super().addSuccess(test)
        self.cases.append((test.id(), "passed"))

    def addFailure(self, test: unittest.TestCase, err: _Err) -> None:  # noqa: N802
        super().addFailure(test, err)
        self.cases.append((test.id(), "failed"))

    def addError(self, test: unittest.TestCase, err: _Err) -> None:  # noqa: N802
        super().addError(test, err)  # a module that does not import, a setUpClass that raised
        self.cases.append((test.id(), "failed"))

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:  # noqa: N802
        super().addSkip(test, reason)
        self.cases.append((test.id(), "skipped"))

    def addExpectedFailure(self, test: unittest.TestCase, err: _Err) -> None:  # noqa: N802
        super().addExpectedFailure(test, err)
        self.cases.append((test.id(), "skipped"))  # as pytest reports an xfail

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:  # noqa: N802
        super().addUnexpectedSuccess(test)
        self.cases.append((test.id(), "failed"))

    def addSubTest(  # noqa: N802
        self, test: unittest.TestCase, subtest: unittest.TestCase, err: _Err | None
    ) -> None:
        super().addSubTest(test, subtest, err)
        if err is not None and err[0] is not None:  # the test's own line is then never a pass
            self.cases.append((test.id(), "failed"))


def junit(cases: list[tuple[str, str]]) -> str:
    """JUnit XML of (test id, status): `pkg.mod.Class.test` as classname `pkg.mod.Class`, name
    `test`; a test that failed in any part (a subtest) is failed."""
    worst: dict[str, str] = {}
    for ident, status in cases:
        if worst.get(ident) != "failed":
            worst[ident] = status
    lines = ['<?xml version="1.0" encoding="utf-8"?>', "<testsuite>"]
    for ident, status in worst.items():
        classname, _, name = ident.rpartition(".") if " " not in ident else ("", "", ident)
        inner = {"passed": "", "failed": "<failure/>", "skipped": "<skipped/>"}[status]
        lines.append(f"<testcase classname={quoteattr(classname)} name={quoteattr(name)}>{inner}</testcase>")
    lines.append("</testsuite>")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    class Runner(unittest.TextTestRunner):
        def _makeResult(self) -> _Recording:  # noqa: N802 - unittest's name
            return _Recording(self.stream, self.descriptions, self.verbosity)

    prog = unittest.main(module=None, argv=["python -m unittest", *argv], testRunner=Runner, exit=False)
    result = prog.result
    cases = result.cases if isinstance(result, _Recording) else []
    with open(os.environ["AUTODEV_JUNIT"], "w", encoding="utf-8") as out:
        out.write(junit(cases))
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
