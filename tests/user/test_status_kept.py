"""`autodev status` prints a rendering kept in the run folder (statustext.MEMO) when the same
status was printed before on the same terminal: the same bytes, without importing rich (issue
33). Anything that changes the output renders again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autodev.store.paths import RunPaths
from autodev.user import statustext
from tests.test_status_json import gated_run

pytestmark = pytest.mark.e2e

# The real console entry point, then which rich modules the process imported (on stderr).
SEEN = (
    "import sys; sys.argv = ['autodev', 'status']\n"
    "from autodev.cli import main\n"
    "try:\n    main()\n"
    "except SystemExit as e:\n    assert not e.code, e.code\n"
    "print(sorted(m for m in sys.modules if m == 'rich' or m.startswith('rich.')), file=sys.stderr)"
)


def _status(repo: Path, **env: str) -> tuple[str, bool]:
    """(what status printed, whether rich was imported)."""
    clean = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "NO_COLOR", "TERM")}
    r = subprocess.run(
        [sys.executable, "-c", SEEN],
        cwd=repo,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout, "rich.console" in r.stderr.strip().splitlines()[-1]


def _fresh(repo: Path, **env: str) -> str:
    """What status prints with nothing kept."""
    (RunPaths(repo).run_dir / statustext.MEMO).unlink(missing_ok=True)
    out, rendered = _status(repo, **env)
    assert rendered
    return out


def test_a_repeated_status_prints_the_kept_rendering_without_rich(repo):
    paths = gated_run(repo)
    for env in ({"COLUMNS": "100"}, {"COLUMNS": "70", "FORCE_COLOR": "1"}):
        first, rendered = _status(repo, **env)  # the model path fills the status cache
        assert rendered
        second, rendered = _status(repo, **env)
        third, rendered_again = _status(repo, **env)
        assert not rendered_again, "a third status with nothing changed imported rich"
        assert first == second == third == _fresh(repo, **env)
    assert "\x1b[" in _fresh(repo, COLUMNS="70", FORCE_COLOR="1")  # the colour one kept its codes
    assert "\x1b[" not in _fresh(repo, COLUMNS="100")
    assert len(json.loads((paths.run_dir / statustext.MEMO).read_text())) >= 1


def test_what_changes_the_output_renders_again(repo):
    paths = gated_run(repo)
    _status(repo, COLUMNS="100")
    kept, _ = _status(repo, COLUMNS="100")
    st = json.loads(paths.state.read_text())
    st["turn"] = st.get("turn", 0) + 1
    paths.state.write_text(json.dumps(st))
    after, rendered = _status(repo, COLUMNS="100")
    assert rendered and after != kept
    assert after == _fresh(repo, COLUMNS="100")
    narrow, rendered = _status(repo, COLUMNS="50")  # another terminal width: another rendering
    assert rendered and narrow == _fresh(repo, COLUMNS="50")


def test_a_cut_or_foreign_memo_only_costs_a_rendering(repo):
    paths = gated_run(repo)
    _status(repo, COLUMNS="100")
    want = _fresh(repo, COLUMNS="100")
    for junk in ('{"k": "te', "[1]", '{"k": 3}'):
        (paths.run_dir / statustext.MEMO).write_text(junk)
        out, rendered = _status(repo, COLUMNS="100")
        assert rendered and out == want


def test_status_never_makes_a_run_folder_for_its_memo(repo):
    from tests.conftest import write_team
    from tests.test_status_json import TEAM

    write_team(repo, TEAM)
    out, _ = _status(repo, COLUMNS="100")
    assert "no run yet" in out
    assert not RunPaths(repo).run_dir.exists()
