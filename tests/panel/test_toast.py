"""A toast sits inside the panel's bordered boxes: it covers neither the Needs-you box's bottom
border nor its right one (headless Textual, the real app on a repository)."""

from __future__ import annotations

import asyncio

from textual.widgets._toast import Toast, ToastRack

from autodev.panel.app import PanelApp
from autodev.store.paths import RunPaths


def test_a_toast_does_not_cover_the_border(repo):
    async def main():
        app = PanelApp(RunPaths(repo))
        async with app.run_test(size=(160, 48), notifications=True) as pilot:
            while not app.loaded.is_set():
                await pilot.pause(0.05)
            app.notify("approval of gate 3 sent; a note long enough to wrap onto a second line of the toast")
            await pilot.pause(0.3)
            toast = app.screen.get_child_by_type(ToastRack).query(Toast).first()
            box = app.query_one("#needs").region
            t = toast.region
            assert t.bottom <= box.bottom - 1, (t, box)  # the box's bottom border is its last row
            assert t.right <= box.right - 1, (t, box)

    asyncio.run(main())
