"""The panel on the repository a best-of group started from shows the group side by side
(issue 34 item 2): each run's state, turns, spend, evidence and audit, under the header."""

from __future__ import annotations

from tests.conftest import write_team
from tests.e2e.helpers import BUILDER
from tests.e2e.test_best_of import ended, start_group, writes
from tests.panel.test_panel import drive, header, until


def test_the_panel_shows_the_group_side_by_side(repo, autodev):
    write_team(repo, BUILDER, writes("a.txt", "a\n"))
    gid = start_group(autodev, repo, "--best-of", "2", "go")
    ended(autodev, repo)

    async def scenario(app, pilot):
        await until(pilot, "the group in the header", lambda: f"best-of group {gid}" in header(app))
        shown = header(app)
        assert f"best-of group {gid}: 2 runs, $0.0000 spent, ended: `autodev pick`" in shown
        assert "run 1: complete · turns 1 · $0.0000 · - · audit accepted" in shown
        assert "run 2: complete · turns 1" in shown

    drive(repo, scenario)
