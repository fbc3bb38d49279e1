"""A fault of the machine names a fix that works: a read-only home is never answered with a
folder inside that home."""

from __future__ import annotations

import errno
from pathlib import Path

from autodev.store.faults import explain


def test_a_read_only_home_is_not_answered_with_a_folder_inside_it(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("AUTODEV_HOME", raising=False)
    refused = home / ".autodev" / "repo-1234" / "state.json"
    fault = explain(OSError(errno.EROFS, "Read-only file system", str(refused)))
    assert fault is not None and fault.message.startswith(f"cannot write {refused}")
    suggested = fault.fix.split("export AUTODEV_HOME=", 1)[1].split("`", 1)[0]
    assert not Path(suggested).expanduser().is_relative_to(home) and "~" not in suggested, fault.fix
    assert suggested.startswith("/var/tmp/autodev-")
    # AUTODEV_HOME on a read-only mount elsewhere: the usual folder in the home is a fine answer
    monkeypatch.setenv("AUTODEV_HOME", str(tmp_path / "ro"))
    fault = explain(OSError(errno.EROFS, "Read-only file system", str(tmp_path / "ro" / "repo-1" / "x")))
    assert fault is not None and f"export AUTODEV_HOME={home / '.autodev'}" in fault.fix
