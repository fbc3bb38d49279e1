"""`autodev-scripted SCRIPT` (or `python -m autodev.scripted SCRIPT` with autodev's own Python):
serve a scripted model on 127.0.0.1 until killed."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from autodev.scripted.script import ScriptError, load_script
from autodev.scripted.server import ScriptedServer


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="autodev-scripted",
        description="Serve a scripted model on 127.0.0.1 until killed (docs/scripted.md).",
    )
    p.add_argument("script", type=Path)
    p.add_argument("--port", type=int, default=0, help="port to listen on (default: any free)")
    p.add_argument("--ledger", type=Path, default=None, help="ledger file (default: a fresh temporary file)")
    a = p.parse_args(argv)
    try:
        script = load_script(a.script)
    except ScriptError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    ledger = a.ledger or Path(tempfile.mkdtemp(prefix="autodev-scripted-")) / "ledger.json"
    server = ScriptedServer(script, ledger, port=a.port)
    print(server.start(), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
