"""Workspace tools on real files, real git and real subprocesses."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from autodev.errors import ToolError
from autodev.harness.tools import REPLAY_SAFE, Workspace, scrubbed_env


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path, repo_templates) -> Path:
    return repo_templates(tmp_path / "repo", _build)


def _build(root: Path) -> None:
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "app.py").write_text("".join(f"line {i}\n" for i in range(1, 1001)))
    (root / "src" / "pkg" / "deep.py").write_text("def needle():\n    return 42\n")
    (root / "README.md").write_text("# demo\nneedle in the readme\n")
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build" / "out.txt").write_text("needle in ignored output\n")
    (root / "blob.bin").write_bytes(b"needle\0\x01\x02")
    git(root, "init", "-q")
    git(root, "config", "user.name", "Test")
    git(root, "config", "user.email", "test@example.com")


def ws(repo: Path, **kw) -> Workspace:
    kw.setdefault("write", True)
    kw.setdefault("command_timeout", 20)
    return Workspace(repo, **kw)


def gone(pid: int) -> bool:
    """The process no longer runs (a zombie waiting for its reaper counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return "\nState:\tZ" in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True


def wait_gone(pid: int, within: float = 3.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if gone(pid):
            return True
        time.sleep(0.05)
    return gone(pid)


# ---------------------------------------------------------------------------- read_file


def test_read_file_numbers_lines_and_pages(repo):
    out = ws(repo).call("read_file", {"path": "src/app.py"})
    assert out.splitlines()[0] == "src/app.py: 1000 lines; showing 1-400"
    assert "   1\tline 1" in out
    assert " 400\tline 400" in out
    assert "line 401" not in out
    assert "read_file(path='src/app.py', offset=401)" in out

    page = ws(repo).call("read_file", {"path": "./src/app.py", "offset": 998, "limit": 10})
    assert "showing 998-1000" in page
    assert page.rstrip().endswith("1000\tline 1000")
    assert "more lines" not in page


def test_read_file_pages_by_output_size(repo):
    (repo / "wide.txt").write_text("".join("x" * 100 + "\n" for _ in range(50)))
    out = ws(repo, max_output=1000).call("read_file", {"path": "wide.txt", "limit": 50})
    assert len(out) < 1300
    assert "more lines: read_file(path='wide.txt', offset=" in out


def test_read_file_accepts_numbers_as_strings(repo):
    out = ws(repo).call("read_file", {"path": "src/app.py", "offset": "5", "limit": "1"})
    assert "showing 5-5" in out and "line 5" in out


def test_read_file_errors(repo):
    w = ws(repo)
    with pytest.raises(ToolError, match="no file 'nope.txt'"):
        w.call("read_file", {"path": "nope.txt"})
    with pytest.raises(ToolError, match="is a folder"):
        w.call("read_file", {"path": "src"})
    with pytest.raises(ToolError, match="past the end.*1000 lines"):
        w.call("read_file", {"path": "src/app.py", "offset": 2000})
    assert "binary file" in w.call("read_file", {"path": "blob.bin"})


# ---------------------------------------------------------------------------- list_files


def test_list_files(repo):
    out = ws(repo).call("list_files", {})
    lines = out.splitlines()
    assert "src/" in lines and "src/app.py" in lines and "README.md" in lines
    assert "src/pkg/" in lines
    assert "src/pkg/deep.py" not in lines  # depth 2 stops above it
    assert not any(line.startswith(".git/") or line == ".git/" for line in lines)
    assert "build/ (ignored by git; not expanded)" in lines
    assert "build/out.txt" not in lines

    deeper = ws(repo).call("list_files", {"path": "src", "depth": 3})
    assert "src/pkg/deep.py" in deeper.splitlines()
    assert "README.md" not in deeper


def test_list_files_is_capped(repo):
    many = repo / "many"
    many.mkdir()
    for i in range(600):
        (many / f"f{i:03}.txt").write_text("x")
    out = ws(repo).call("list_files", {"path": "many"})
    assert "listing cut at 500 entries" in out
    assert len([ln for ln in out.splitlines() if ln.startswith("many/f")]) == 500


# ---------------------------------------------------------------------------- search


def test_search_reports_path_line_text(repo):
    out = ws(repo).call("search", {"pattern": r"needle"})
    lines = out.splitlines()
    assert "README.md:2: needle in the readme" in lines
    assert "src/pkg/deep.py:1: def needle():" in lines
    assert not any(ln.startswith("build/") for ln in lines)  # git-ignored
    assert not any(ln.startswith("blob.bin") for ln in lines)  # binary


def test_search_path_glob_and_no_match(repo):
    w = ws(repo)
    assert w.call("search", {"pattern": "needle", "glob": "*.py"}).splitlines() == [
        "src/pkg/deep.py:1: def needle():"
    ]
    assert w.call("search", {"pattern": "return", "path": "src/pkg/deep.py"}).splitlines() == [
        "src/pkg/deep.py:2: return 42"
    ]
    assert "no matches" in w.call("search", {"pattern": "zebra"})
    # asked for by name, an ignored folder is searched after all
    assert w.call("search", {"pattern": "needle", "path": "build"}).splitlines() == [
        "build/out.txt:1: needle in ignored output"
    ]
    with pytest.raises(ToolError, match="not a valid regular expression"):
        w.call("search", {"pattern": "def ("})


def test_search_is_capped(repo):
    out = ws(repo).call("search", {"pattern": r"^line \d+$"})
    assert "results cut at 200 matches" in out
    assert len([ln for ln in out.splitlines() if ln.startswith("src/app.py:")]) == 200


def test_search_outside_git_walks_the_folder(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.txt").write_text("alpha\nbeta\n")
    (tmp_path / ".git").mkdir()  # a stray folder named .git is never searched
    (tmp_path / ".git" / "config").write_text("beta\n")
    out = Workspace(tmp_path, write=False, command_timeout=5).call("search", {"pattern": "beta"})
    assert out.splitlines() == ["a/x.txt:2: beta"]


# ---------------------------------------------------------------------------- write and edit


def test_write_file_creates_parents(repo):
    w = ws(repo)
    out = w.call("write_file", {"path": "new/dir/x.txt", "content": "hello\nworld\n"})
    assert out.startswith("created new/dir/x.txt")
    assert (repo / "new" / "dir" / "x.txt").read_text() == "hello\nworld\n"
    assert w.call("write_file", {"path": "new/dir/x.txt", "content": "bye\n"}).startswith("replaced")
    assert (repo / "new" / "dir" / "x.txt").read_text() == "bye\n"
    with pytest.raises(ToolError, match="is a folder"):
        w.call("write_file", {"path": "src", "content": "x"})


def test_edit_file_counts_occurrences(repo):
    w = ws(repo)
    (repo / "e.txt").write_text("a = 1\nb = 1\nc = 2\n")
    with pytest.raises(ToolError, match="occurs 2 times in 'e.txt', not 1"):
        w.call("edit_file", {"path": "e.txt", "old": "= 1", "new": "= 9"})
    assert (repo / "e.txt").read_text() == "a = 1\nb = 1\nc = 2\n"  # untouched
    with pytest.raises(ToolError, match="occurs 0 times"):
        w.call("edit_file", {"path": "e.txt", "old": "zzz", "new": "y"})
    assert "replaced 2 occurrences" in w.call(
        "edit_file", {"path": "e.txt", "old": "= 1", "new": "= 9", "count": 2}
    )
    assert (repo / "e.txt").read_text() == "a = 9\nb = 9\nc = 2\n"
    w.call("edit_file", {"path": "e.txt", "old": "c = 2", "new": "c = 3"})
    assert (repo / "e.txt").read_text() == "a = 9\nb = 9\nc = 3\n"
    with pytest.raises(ToolError, match="does not exist"):
        w.call("edit_file", {"path": "missing.txt", "old": "a", "new": "b"})


def test_edit_file_keeps_crlf(repo):
    (repo / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    ws(repo).call("edit_file", {"path": "dos.txt", "old": "two", "new": "2"})
    assert (repo / "dos.txt").read_bytes() == b"one\r\n2\r\n"


def test_non_writer_has_no_write_tools(repo):
    w = ws(repo, write=False)
    names = {s["function"]["name"] for s in w.specs()}
    assert names == w.names() == {"read_file", "list_files", "search", "run_command"}
    with pytest.raises(ToolError, match="write_file: this participant cannot change files"):
        w.call("write_file", {"path": "x.txt", "content": "x"})
    with pytest.raises(ToolError, match="edit_file"):
        w.call("edit_file", {"path": "README.md", "old": "demo", "new": "x"})
    assert not (repo / "x.txt").exists()
    assert "exit code: 0" in w.call("run_command", {"command": "true"})  # reviewers run tests


def test_writer_specs_are_openai_style(repo):
    specs = ws(repo).specs()
    assert {s["function"]["name"] for s in specs} == {
        "read_file",
        "list_files",
        "search",
        "write_file",
        "edit_file",
        "run_command",
    }
    for s in specs:
        assert s["type"] == "function"
        params = s["function"]["parameters"]
        assert params["type"] == "object"
        assert set(params["required"]) <= set(params["properties"])
        assert s["function"]["description"]
    edit = next(s for s in specs if s["function"]["name"] == "edit_file")
    assert edit["function"]["parameters"]["required"] == ["path", "old", "new"]
    assert REPLAY_SAFE == {"read_file", "list_files", "search"}


# ---------------------------------------------------------------------------- path safety


@pytest.mark.parametrize(
    "tool,args",
    [
        ("read_file", {"path": "../outside.txt"}),
        ("read_file", {"path": "src/../../outside.txt"}),
        ("list_files", {"path": ".."}),
        ("search", {"pattern": "x", "path": "../"}),
        ("write_file", {"path": "../outside.txt", "content": "x"}),
        ("edit_file", {"path": "../outside.txt", "old": "a", "new": "b"}),
    ],
)
def test_dotdot_is_refused(repo, tool, args):
    (repo.parent / "outside.txt").write_text("secret a\n")
    with pytest.raises(ToolError, match="is outside the repository; use a path relative"):
        ws(repo).call(tool, args)
    assert (repo.parent / "outside.txt").read_text() == "secret a\n"


def test_absolute_path_is_refused(repo):
    with pytest.raises(ToolError, match="is absolute"):
        ws(repo).call("read_file", {"path": str(repo / "README.md")})
    with pytest.raises(ToolError, match="is absolute"):
        ws(repo).call("write_file", {"path": "/tmp/autodev-should-not-exist", "content": "x"})
    assert not Path("/tmp/autodev-should-not-exist").exists()


def test_symlinks_leading_outside_are_refused(repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret needle\n")
    (repo / "link.txt").symlink_to(outside / "secret.txt")
    (repo / "linkdir").symlink_to(outside)
    w = ws(repo)
    with pytest.raises(ToolError, match="leads outside the repository"):
        w.call("read_file", {"path": "link.txt"})
    with pytest.raises(ToolError, match="leads outside the repository"):
        w.call("read_file", {"path": "linkdir/secret.txt"})
    with pytest.raises(ToolError, match="leads outside the repository"):
        w.call("write_file", {"path": "linkdir/new.txt", "content": "x"})
    with pytest.raises(ToolError, match="leads outside the repository"):
        w.call("list_files", {"path": "linkdir"})
    assert not (outside / "new.txt").exists()
    # a search over the whole repository does not follow the links out either
    assert "top secret" not in w.call("search", {"pattern": "needle"})


def test_symlink_inside_the_repository_is_fine(repo):
    (repo / "alias.py").symlink_to(repo / "src" / "pkg" / "deep.py")
    assert "def needle" in ws(repo).call("read_file", {"path": "alias.py"})


@pytest.mark.parametrize(
    "path", [".git/config", "./.git/HEAD", ".git", "src/../.git/config", "gitlink/config"]
)
def test_dot_git_is_refused(repo, path):
    (repo / "gitlink").symlink_to(repo / ".git")
    with pytest.raises(ToolError, match=r"outside the repository|inside \.git/"):
        ws(repo).call("read_file", {"path": path})
    with pytest.raises(ToolError, match=r"outside the repository|inside \.git/"):
        ws(repo).call("write_file", {"path": path, "content": "x"})
    assert "[core]" in (repo / ".git" / "config").read_text()


# ---------------------------------------------------------------------------- bad calls


def test_bad_calls_name_the_tool_and_argument(repo):
    w = ws(repo)
    with pytest.raises(ToolError, match="unknown tool 'rm_rf'.*read_file"):
        w.call("rm_rf", {})
    with pytest.raises(
        ToolError, match=r"read_file: missing argument 'path' \(string\); usage: read_file\(path: string"
    ):
        w.call("read_file", {})
    with pytest.raises(ToolError, match="read_file: argument 'offset' must be an integer >= 1"):
        w.call("read_file", {"path": "README.md", "offset": 0})
    with pytest.raises(ToolError, match="read_file: argument 'limit' must be an integer"):
        w.call("read_file", {"path": "README.md", "limit": "lots"})
    with pytest.raises(ToolError, match="write_file: argument 'content' must be a string"):
        w.call("write_file", {"path": "a.txt", "content": 5})
    with pytest.raises(ToolError, match="search: unknown argument.*regex"):
        w.call("search", {"regex": "x"})
    with pytest.raises(ToolError, match="list_files: arguments must be a JSON object"):
        w.call("list_files", ["."])  # type: ignore[arg-type]
    with pytest.raises(ToolError, match="run_command: argument 'timeout_sec' must be a number > 0"):
        w.call("run_command", {"command": "true", "timeout_sec": -1})


# ---------------------------------------------------------------------------- run_command


def test_run_command_reports_exit_code_and_output(repo):
    out = ws(repo).call("run_command", {"command": "pwd; echo to-stderr >&2; cat; exit 3"})
    assert out.startswith("exit code: 3\n")
    assert str(repo.resolve()) in out  # runs in the repository root
    assert "to-stderr" in out  # stderr is merged
    assert "(no output)" in ws(repo).call("run_command", {"command": "true"})


def test_timeout_kills_the_whole_process_group(repo):
    start = time.monotonic()
    out = ws(repo).call("run_command", {"command": "sleep 30 & echo $! > pid; wait", "timeout_sec": 0.5})
    assert time.monotonic() - start < 10
    assert "timed out after 0.5 s" in out
    pid = int((repo / "pid").read_text())
    assert wait_gone(pid), f"grandchild {pid} still running"


def test_timeout_is_capped_by_the_configured_timeout(repo):
    start = time.monotonic()
    out = ws(repo, command_timeout=0.5).call("run_command", {"command": "sleep 20", "timeout_sec": 100})
    assert "timed out after 0.5 s" in out
    assert time.monotonic() - start < 10


def test_background_leftovers_are_stopped(repo):
    # Detached from the output pipe, so the command returns at once; the leftover must not live on.
    out = ws(repo).call("run_command", {"command": "sleep 30 >/dev/null 2>&1 & echo $! > pid"})
    assert out.startswith("exit code: 0")
    assert wait_gone(int((repo / "pid").read_text()))


def test_background_holding_output_is_bounded_by_the_timeout(repo):
    start = time.monotonic()
    out = ws(repo).call("run_command", {"command": "sleep 30 & echo started", "timeout_sec": 1})
    assert time.monotonic() - start < 10
    assert out.startswith("exit code: 0 (processes it left in the background")
    assert "started" in out


def test_output_is_truncated_with_a_note(repo):
    cmd = "echo BEGIN; head -c 100000 /dev/zero | tr '\\0' x; echo; echo END"
    out = ws(repo, max_output=1000).call("run_command", {"command": cmd})
    assert "output cut: 100011 bytes in all" in out
    assert "BEGIN" in out and out.rstrip().endswith("END")
    assert len(out) < 1300


def test_environment_is_scrubbed(repo, monkeypatch):
    monkeypatch.setenv("FOO_API_KEY", "foo-key-value-123456")
    monkeypatch.setenv("MY_PROXY_SECRET", "proxy-secret-98765")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-0000000")
    monkeypatch.setenv("HF_TOKEN", "hf_token_1111111")
    monkeypatch.setenv("HARMLESS_SETTING", "keep-me")
    w = ws(repo, secret_env=["MY_PROXY_SECRET"])
    out = w.call(
        "run_command",
        {
            "command": "echo ${FOO_API_KEY:-unset1} ${MY_PROXY_SECRET:-unset2} "
            "${OPENAI_API_KEY:-unset3} ${HF_TOKEN:-unset4}; env"
        },
    )
    assert "unset1 unset2 unset3 unset4" in out
    for value in ("foo-key-value-123456", "proxy-secret-98765", "sk-openai-0000000", "hf_token_1111111"):
        assert value not in out
    assert "HARMLESS_SETTING=keep-me" in out

    env = scrubbed_env(
        ["MY_PROXY_SECRET"],
        {
            "A_API_TOKEN": "1",
            "X_SESSION_TOKEN": "2",
            "MY_PROXY_SECRET": "3",
            "GITHUB_TOKEN": "4",
            "AWS_SECRET_ACCESS_KEY": "5",
            "PATH": "/bin",
        },
    )
    assert env == {"PATH": "/bin"}


def test_secret_values_are_masked_in_results(repo, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-very-secret")
    (repo / "leak.txt").write_text("key=sk-ant-very-secret\n")
    out = ws(repo).call("read_file", {"path": "leak.txt"})
    assert "sk-ant-very-secret" not in out and "key=[redacted]" in out


def test_command_guard_refuses_without_running(repo):
    def guard(cmd: str) -> str | None:
        return "git push needs an approved gate; post a gate first" if "git push" in cmd else None

    w = ws(repo, command_guard=guard)
    with pytest.raises(ToolError, match="needs an approved gate"):
        w.call("run_command", {"command": "touch ran && git push"})
    assert not (repo / "ran").exists()
    assert "exit code: 0" in w.call("run_command", {"command": "touch ok"})
    assert (repo / "ok").exists()


# ---------------------------------------------------------------------------- no input wedges a turn


def test_catastrophic_pattern_returns_promptly(repo):
    (repo / "aaa.txt").write_text("a" * 50000 + "!\n")
    began = time.monotonic()
    out = ws(repo).call("search", {"pattern": "(a+)+$", "path": "aaa.txt"})
    assert time.monotonic() - began < 10
    assert out.startswith("no matches")


def test_search_finds_dotfiles_but_not_git_internals(repo):
    (repo / ".github").mkdir()
    (repo / ".github" / "ci.yml").write_text("needle: yes\n")
    out = ws(repo).call("search", {"pattern": "needle", "glob": "*.yml"})
    assert out.splitlines() == [".github/ci.yml:1: needle: yes"]
    assert not any(ln.startswith(".git/") for ln in ws(repo).call("search", {"pattern": "."}).splitlines())


def test_search_glob_with_a_folder(repo):
    out = ws(repo).call("search", {"pattern": "needle", "glob": "src/**/*.py"})
    assert out.splitlines() == ["src/pkg/deep.py:1: def needle():"]


def test_latin1_file_names_are_shown_escaped(repo):
    with open(os.path.join(os.fsencode(repo), b"caf\xe9.txt"), "wb") as f:
        f.write(b"needle caf\xe9\n")
    w = ws(repo)
    listed = w.call("list_files", {})
    found = w.call("search", {"pattern": "needle caf"})
    for out in (listed, found):
        out.encode("utf-8")  # valid UTF-8: no lone surrogate left
    assert "caf\\xe9.txt" in listed
    assert "caf\\xe9.txt:1: needle caf\\xe9" in found.splitlines()


def test_a_path_2100_levels_deep_is_no_recursion_error(repo):
    deep = os.path.join(os.fsencode(repo), b"d")
    os.mkdir(deep)
    fd = os.open(deep, os.O_RDONLY)
    for _ in range(2100):  # deeper than PATH_MAX allows to name at once
        os.mkdir("d", dir_fd=fd)
        nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nxt
    os.close(fd)
    try:
        _deep_calls(ws(repo))
    finally:  # pytest's own clean-up would recurse as deep: take the tree down level by level
        here = os.getcwd()
        try:
            os.chdir(deep)
            for _ in range(2100):
                os.chdir("d")
            for _ in range(2100):
                os.chdir("..")
                os.rmdir("d")
        finally:
            os.chdir(here)


def _deep_calls(w) -> None:
    for name, args in [
        ("search", {"pattern": "needle", "path": "d"}),
        ("list_files", {"path": "d", "depth": 5000}),
        ("read_file", {"path": "/".join(["d"] * 2101)}),
    ]:
        try:
            out = w.call(name, args)
        except ToolError as e:  # a clear error is fine; a RecursionError is not
            out = str(e)
        assert isinstance(out, str) and "RecursionError" not in out


def test_text_that_cannot_be_written_is_a_tool_error(repo):
    with pytest.raises(ToolError, match="write_file"):
        ws(repo).call("write_file", {"path": "x.txt", "content": "lone \ud800"})


def test_a_fifo_is_refused_by_read_file_and_cut_by_the_deadline_in_search(repo):
    os.mkfifo(repo / "pipe")
    w = ws(repo)
    with pytest.raises(ToolError, match="not a regular file"):
        w.call("read_file", {"path": "pipe"})
    w.limit(time.monotonic() + 1.0)
    began = time.monotonic()
    out = w.call("search", {"pattern": "x", "path": "pipe"})
    assert time.monotonic() - began < 5
    assert "stopped after" in out and "time limit" in out


def test_the_turn_deadline_cuts_a_command(repo):
    w = ws(repo, command_timeout=60)
    w.limit(time.monotonic() + 1.0)
    began = time.monotonic()
    out = w.call("run_command", {"command": "sleep 30"})
    assert time.monotonic() - began < 5
    assert "timed out" in out and "turn's time left" in out


def test_stop_cuts_a_command_and_a_search(repo):
    import threading

    stop = threading.Event()
    w = ws(repo, command_timeout=60)
    w.limit(None, stop.is_set)
    threading.Timer(0.5, stop.set).start()
    began = time.monotonic()
    out = w.call("run_command", {"command": "sleep 30"})
    assert time.monotonic() - began < 5
    assert out.startswith("stopped: the user is stopping the run")
    os.mkfifo(repo / "pipe")
    began = time.monotonic()
    out = w.call("search", {"pattern": "x", "path": "pipe"})
    assert time.monotonic() - began < 5 and "the run is stopping" in out
