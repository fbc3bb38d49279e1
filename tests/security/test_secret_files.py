"""Keys in repository files stay out (issue 20): secret files are refused by the file tools and
search and seen empty by commands in the sandbox; the masker catches the encodings a command can
make of a known key (rot13, base32, spacing, case, reversal, od), made here by the real tools."""

from __future__ import annotations

import base64
import codecs
import subprocess
from pathlib import Path

import pytest

from autodev.errors import ToolError
from autodev.guard import sandbox
from autodev.guard.redact import MASK, Redactor
from autodev.guard.secrets import SECRET_FILES, is_secret_file
from autodev.harness.tools import Workspace

KEY = "sk-live-Abc123XyZ987qwerty"
BOX = sandbox.resolve("auto")
needs_bwrap = pytest.mark.skipif(not BOX.active, reason=f"no working bubblewrap here: {BOX.problem}")


def shell(command: str, cwd: Path) -> str:
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def keyed(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / ".env").write_text(f"API_KEY={KEY}\n")
    (repo / "deploy").mkdir()
    (repo / "deploy" / "server.pem").write_text("-----BEGIN PRIVATE KEY-----\nMIIB\n")
    (repo / "app.py").write_text("print('hello')\n")
    return repo


@pytest.mark.parametrize(
    "command",
    [
        "cat .env | tr 'A-Za-z' 'N-ZA-Mn-za-m'",  # rot13
        "base32 .env",
        "base32 -w 7 .env",
        "sed 's/./& /g' .env",  # spaced
        "tr 'A-Z' 'a-z' < .env",  # lowercased
        "tr 'a-z' 'A-Z' < .env",  # uppercased
        "tr 'a-zA-Z' 'A-Za-z' < .env",  # case-swapped
        "rev .env | tr 'a-zA-Z' 'A-Za-z'",  # reversed and case-swapped
        "od -c .env",
        "od -An -tx1 .env",
        "od -x .env",
        "xxd -p .env 2>/dev/null || od -An -tx1 .env",
        "base64 .env",
    ],
)
def test_encodings_a_command_makes_of_a_known_key_are_masked(keyed, command):
    out = shell(command, keyed)
    masked = Redactor([KEY]).text(out)
    assert MASK in masked, (command, out)
    # nothing of the key is left in a readable form
    for form in (KEY, KEY.lower(), codecs.encode(KEY, "rot13"), KEY[::-1]):
        assert form[4:16] not in masked.replace(" ", "").replace("\n", "")


def test_the_masker_keeps_ordinary_text_and_masks_tell_user_style_text():
    r = Redactor([KEY])
    assert r.text("ordinary words, sk-live and 123") == "ordinary words, sk-live and 123"
    told = "the key, backwards: " + KEY[::-1].swapcase()
    assert r(told) == "the key, backwards: " + MASK
    assert r({"text": "b32 " + base64.b32encode(("x" + KEY).encode()).decode()})["text"].count(MASK) == 1


def test_secret_files_match_names_and_paths():
    assert all(is_secret_file(p, SECRET_FILES) for p in (".env", "sub/.env.prod", "k/id_ed25519", "a.pem"))
    assert not any(is_secret_file(p, SECRET_FILES) for p in ("env.py", ".envrc", "src/key_points.md"))


def test_file_tools_and_search_refuse_secret_files_unless_allowed(keyed):
    ws = Workspace(keyed, write=True, command_timeout=30)
    for tool, args in (
        ("read_file", {"path": ".env"}),
        ("read_file", {"path": "deploy/server.pem"}),
        ("write_file", {"path": ".env.local", "content": "X=1\n"}),
        ("edit_file", {"path": ".env", "old": "API", "new": "X"}),
    ):
        with pytest.raises(ToolError, match="secret file"):
            ws.call(tool, args)
    found = ws.call("search", {"pattern": "API_KEY|BEGIN PRIVATE"})
    assert ".env" not in found and "server.pem" not in found
    allowed = Workspace(keyed, write=True, command_timeout=30, secret_files=())
    assert "API_KEY" in allowed.call("read_file", {"path": ".env"})


@needs_bwrap
def test_commands_in_the_sandbox_see_secret_files_empty(keyed):
    room = BOX.room(keyed, secret_files=SECRET_FILES)
    ws = Workspace(keyed, write=True, command_timeout=30, room=room)
    out = ws.call("run_command", {"command": "cat .env deploy/server.pem; wc -c .env; cat app.py"})
    assert KEY not in out and "PRIVATE KEY" not in out and "hello" in out
    assert "0 .env" in out
    assert (keyed / ".env").read_text() == f"API_KEY={KEY}\n"  # on the host, untouched
