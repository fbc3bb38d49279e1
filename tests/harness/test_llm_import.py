"""litellm's import, most of a daemon's CPU, runs with the cyclic collector off and leaves what it
built frozen out of later collections (and out of the walk at the interpreter's exit). Checked on
the collector's own counters in a fresh interpreter, not with a timing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# A fresh interpreter importing litellm (seconds of CPU, as a daemon's start): not in `make test-fast`.
pytestmark = pytest.mark.e2e

PROBE = """
import gc, json, sys
was = {was}
if not was:
    gc.disable()
seen = []
gc.callbacks.append(lambda phase, info: seen.append(info["generation"]) if phase == "start" else None)
from autodev.harness import llm
before, ran = gc.get_freeze_count(), len(seen)
llm.load()
loaded = "litellm" in sys.modules
llm.load()  # a second call imports nothing and freezes nothing more
print(json.dumps({{"collections": len(seen) - ran, "frozen": gc.get_freeze_count() - before,
                  "enabled": gc.isenabled(), "loaded": loaded}}))
"""


def probe(was_on: bool) -> dict:
    r = subprocess.run(
        [sys.executable, "-c", PROBE.format(was=was_on)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_the_import_runs_without_collections_and_freezes_what_it_built():
    got = probe(was_on=True)
    assert got["loaded"] and got["enabled"]
    assert got["collections"] == 0  # a plain `import litellm` runs hundreds
    assert got["frozen"] > 100_000  # litellm's modules, classes and their objects
