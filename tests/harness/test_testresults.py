"""The evidence's pure part: JUnit XML and `go test -json` read per test, test ids, the
classification of a base run against a head run, and the gate's reasons (SPEC §22)."""

from __future__ import annotations

import pytest

from autodev.harness import testresults as tr
from autodev.records.evidence import TestRun

JUNIT = b"""<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="5">
<testcase classname="tests.test_calc" name="test_add" time="0.01"/>
<testcase classname="tests.test_calc" name="test_sub" time="0.01"><failure message="assert 1 == 2">x</failure></testcase>
<testcase classname="tests.test_calc.TestDiv" name="test_zero[1]" time="0.01"><skipped type="pytest.xfail" message="xfail"/></testcase>
<testcase classname="tests.test_calc" name="test_err" time="0.01"><error message="fixture"/></testcase>
<testcase classname="" name="tests.test_broken" time="0"><error message="collection failure"/></testcase>
</testsuite></testsuites>
"""


def test_junit_is_read_per_test_with_pytest_ids():
    files = {"tests/test_calc.py"}
    got = tr.parse_junit(JUNIT, files.__contains__)
    assert got == {
        "tests/test_calc.py::test_add": "passed",
        "tests/test_calc.py::test_sub": "failed",
        "tests/test_calc.py::TestDiv::test_zero[1]": "skipped",
        "tests/test_calc.py::test_err": "failed",
        "tests.test_broken": "failed",
    }


def test_a_class_name_that_is_no_file_stays_as_it_is():
    data = b'<testsuite><testcase classname="pkg.Suite" name="works"/></testsuite>'
    assert tr.parse_junit(data, lambda p: False) == {"pkg.Suite::works": "passed"}


def test_a_results_file_with_entities_is_refused_not_expanded():
    bomb = (
        b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><testsuite><testcase name="&a;"/></testsuite>'
    )
    with pytest.raises(ValueError, match="DTD or entities"):
        tr.parse_junit(bomb, lambda p: False)


def test_garbage_is_an_error_not_an_empty_result():
    with pytest.raises(SyntaxError):
        tr.parse_junit(b"PASSED 3 tests", lambda p: False)


def test_go_json_lines():
    text = "\n".join(
        [
            '{"Action":"run","Package":"ex/calc","Test":"TestAdd"}',
            '{"Action":"pass","Package":"ex/calc","Test":"TestAdd"}',
            '{"Action":"fail","Package":"ex/calc","Test":"TestSub"}',
            '{"Action":"skip","Package":"ex/calc","Test":"TestDiv"}',
            '{"Action":"pass","Package":"ex/calc"}',
            "not json",
        ]
    )
    assert tr.parse_go_json(text) == {
        "ex/calc::TestAdd": "passed",
        "ex/calc::TestSub": "failed",
        "ex/calc::TestDiv": "skipped",
    }


def run(**results) -> TestRun:
    return TestRun(outcome="ran", results={k.replace("__", "::"): v for k, v in results.items()})


def classify(base: TestRun, head: TestRun, changed=("calc.py",)):
    return tr.classify(base, head, command="pytest", chosen="detected", changed=changed)


def test_the_four_classes():
    base = run(a="passed", b="failed", c="failed", d="passed")
    head = run(a="passed", b="passed", c="failed", d="failed", e="passed", f="failed")
    ev = classify(base, head)
    assert ev.outcome == "ran"
    assert ev.pass_to_pass == ["a"]
    assert ev.fail_to_pass == ["b", "e"]  # a new passing test failed before by not existing
    assert ev.still_failing == ["c", "f"]
    assert ev.pass_to_fail == ["d"]
    assert ev.summary() == "✘ 1 broke: d"


def test_vanished_skipped_and_xfailed_tests_count_as_broken():
    base = run(gone="passed", skip="passed", xfail="failed", old_skip="skipped")
    head = run(skip="skipped", xfail="skipped", old_skip="skipped")
    ev = classify(base, head)
    assert ev.pass_to_fail == ["gone", "skip", "xfail"]
    assert ev.gaps() and "3 test(s) broke" in ev.gaps()[0]


def test_a_fix_reads_as_now_pass():
    ev = classify(run(t__x="failed", t__y="passed"), run(t__x="passed", t__y="passed"))
    assert ev.summary() == "✔ 1 now pass, 0 broke"
    assert ev.gaps() == []


def test_code_changed_and_nothing_newly_passes_is_a_gap_but_docs_are_not_code():
    same = run(x="failed")
    ev = classify(same, same)
    assert ev.gaps() == ["no test newly passes, and the run changed code (still failing: x)"]
    assert ev.summary() == "✘ 0 now pass, 0 broke"
    docs = classify(same, same, changed=("README.md", "docs/guide.rst"))
    assert docs.gaps() == [] and docs.code_changed == [] and docs.summary() == "✔ 0 now pass, 0 broke"


def test_a_run_that_changed_only_tests_is_a_gap_whatever_newly_passes():
    """The gamed done (issue 30): the failing test rewritten so it passes, or a new passing test,
    and no code changed. The code under test is the base's, so a test that newly passes shows
    only that the tests changed."""
    rewritten = classify(
        run(t__x="failed", t__y="passed"), run(t__x="passed", t__y="passed"), ("tests/test_x.py",)
    )
    assert rewritten.fail_to_pass == ["t::x"] and rewritten.code_changed == []
    assert rewritten.summary() == "✘ only tests changed (1 now pass)"
    assert rewritten.gaps() == [
        "the run changed only tests (tests/test_x.py) and no code, so no test shows the code fixed; "
        "newly passing: t::x"
    ]
    added = classify(run(a="passed"), run(a="passed", b="failed"), ("test_b.py", "README.md"))
    assert added.gaps() == [
        "the run changed only tests (test_b.py) and no code, so no test shows the code fixed"
    ]
    # a test deleted and no code changed: both reasons
    deleted = classify(run(a="passed", b="failed"), run(b="failed"), ("tests/test_a.py",))
    assert len(deleted.gaps()) == 2 and deleted.summary() == "✘ 1 broke: a"


def test_a_fix_with_its_own_new_test_is_no_gap():
    """The honest team writes the failing test first: a new test file and a code change."""
    ev = classify(run(t__x="passed"), run(t__x="passed", t__new="passed"), ("calc.py", "tests/test_new.py"))
    assert ev.fail_to_pass == ["t::new"] and ev.gaps() == [] and ev.summary() == "✔ 1 now pass, 0 broke"


def test_runs_that_could_not_run_are_named_and_no_tests_never_reopens():
    ev = classify(run(a="passed"), TestRun(outcome="timeout", reason="killed after 5s"))
    assert ev.outcome == "timeout" and ev.gaps() == [
        "the tests could not run (timeout): at the head: killed after 5s"
    ]
    none = TestRun(outcome="no_tests")
    assert classify(none, none).outcome == "no_tests" and classify(none, none).gaps() == []


def test_detection(tmp_path):
    assert tr.detect(tmp_path) is None
    (tmp_path / "package.json").write_text(
        '{"scripts": {"test": "echo \\"Error: no test specified\\" && exit 1"}}'
    )
    assert tr.detect(tmp_path) is None
    (tmp_path / "go.mod").write_text("module ex\n")
    assert tr.detect(tmp_path) == ("go test -json ./...", "go.mod")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_a(): pass\n")
    assert tr.detect(tmp_path)[0] == "python3 -m pytest -q"


def test_commands_get_their_machine_format():
    assert tr.results_format("python3 -m pytest -q") == "junit"
    assert tr.results_format("go test -json ./...") == "go-json"
    assert tr.results_format("make check") == "junit"  # it must write $AUTODEV_JUNIT
    assert tr.pytest_addopts("/w/j.xml", "-x") == "-x -p no:cacheprovider --junitxml=/w/j.xml"
    assert tr.simple_pytest("python3 -m pytest -q tests") and not tr.simple_pytest("pytest -q && echo ok")
    assert tr.results_format("cargo test") == "cargo-json" and tr.unsupported("cargo test --release") == ""
    for custom in ("cargo test -- --nocapture", "cd x && cargo test", "cargo test $FLAGS"):
        assert tr.results_format(custom) == "junit" and "unsupported test command" in tr.unsupported(custom)
    assert tr.is_test_path("src/__tests__/a.js") and tr.is_test_path("pkg/a_test.go")
    assert not tr.is_test_path("src/calc.py")


def test_cargo_binaries_and_libtest_json():
    """cargo's build messages name the test binaries (inside the copy only); libtest's JSON gives
    each test's status, a test that started and never ended failed, no JSON at all is an error."""
    import json

    def artifact(src: str, exe: str | None, test: bool = True) -> str:
        return json.dumps(
            {
                "reason": "compiler-artifact",
                "manifest_path": "/w/crate/Cargo.toml",
                "target": {"src_path": src},
                "profile": {"test": test},
                "executable": exe,
            }
        )

    lines = [
        artifact("/w/crate/src/lib.rs", "/w/crate/target/debug/deps/calc-1"),
        artifact("/w/crate/src/lib.rs", None, test=False),  # the library itself
        artifact("/w/crate/tests/it.rs", "/elsewhere/it-2"),  # outside the copy: left out
        json.dumps({"reason": "build-finished", "success": True}),
        "not json",
    ]
    got = tr.cargo_binaries("\n".join(lines).encode(), "/w")
    assert got == [("crate/src/lib.rs", "crate/target/debug/deps/calc-1", "crate")]
    text = "\n".join(
        [
            '{ "type": "suite", "event": "started", "test_count": 4 }',
            '{ "type": "test", "event": "started", "name": "t::ok" }',
            '{ "type": "test", "name": "t::ok", "event": "ok" }',
            '{ "type": "test", "name": "t::bad", "event": "failed", "stdout": "panicked" }',
            '{ "type": "test", "name": "t::later", "event": "ignored" }',
            '{ "type": "test", "event": "started", "name": "t::died" }',
        ]
    )
    assert tr.parse_libtest_json(text, "src/lib.rs") == {
        "src/lib.rs::t::ok": "passed",
        "src/lib.rs::t::bad": "failed",
        "src/lib.rs::t::later": "skipped",
        "src/lib.rs::t::died": "failed",
    }
    with pytest.raises(ValueError, match="wrote no libtest JSON"):
        tr.parse_libtest_json("running 1 test\ntest t::ok ... ok\n", "src/lib.rs")


def test_newly_passing_tests_that_pass_without_the_code_change_are_no_evidence():
    ev = classify(run(t__x="failed"), run(t__x="passed", t__new="passed"), ("calc.py", "tests/test_x.py"))
    assert ev.gaps() == [] and ev.by_the_code() == ["t::new", "t::x"]
    some = ev.model_copy(update={"pass_without_code": ["t::new"]})
    assert some.gaps() == [] and some.by_the_code() == ["t::x"] and some.summary() == "✔ 2 now pass, 0 broke"
    assert some.counts()["pass_without_code"] == 1
    none = ev.model_copy(update={"pass_without_code": ["t::new", "t::x"]})
    assert none.summary() == "✘ 2 now pass without the code change, 0 broke"
    assert none.gaps() == [
        "no test newly passes because of the code change: t::new, t::x pass on the base's code with the run's tests too"
    ]


def test_unittest_repositories_are_detected_as_unittest_and_pytest_ones_stay_pytest(tmp_path):
    """A repository whose test files import unittest and never mention pytest is run with the
    standard library (the sandbox's python3 may have no pytest); any mention of pytest, a pytest
    configuration or a bare test function keeps pytest."""
    (tmp_path / "test_a.py").write_text("import unittest\n\nclass T(unittest.TestCase):\n    pass\n")
    assert tr.detect(tmp_path) == (
        "python3 -m unittest",
        "Python unittest tests (test files import unittest; no pytest)",
    )
    (tmp_path / "test_b.py").write_text("def test_b():\n    assert True\n")  # only pytest runs this
    assert tr.detect(tmp_path)[0] == "python3 -m pytest -q"
    (tmp_path / "test_b.py").write_text("import unittest\nimport pytest\n")
    assert tr.detect(tmp_path)[0] == "python3 -m pytest -q"
    (tmp_path / "test_b.py").unlink()
    (tmp_path / "conftest.py").write_text("")
    assert tr.detect(tmp_path)[0] == "python3 -m pytest -q"


def test_a_plain_unittest_command_runs_as_the_junit_runner_and_a_compound_one_is_refused():
    assert tr.is_unittest("python3 -m unittest") and tr.is_unittest("python -m unittest discover -s tests -v")
    assert tr.unittest_command("python3 -m unittest") == f"python3 {tr.UNITTEST_RUNNER}"
    assert (
        tr.unittest_command("python -m unittest discover -s tests")
        == f"python {tr.UNITTEST_RUNNER} discover -s tests"
    )
    for compound in (
        "python3 -m unittest -q 2>&1 | tail -3",
        "cd x && python3 -m unittest",
        "python3 -m unittest $T",
    ):
        assert not tr.is_unittest(compound)
        assert "plain `python3 -m unittest [args]`" in tr.unsupported(compound)
    assert tr.unsupported("python3 -m unittest") == ""
    with pytest.raises(ValueError, match="not a plain"):
        tr.unittest_command("pytest -q")
