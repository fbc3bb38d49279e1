"""`python -m autodev`: the CLI. `-m` puts the working directory (often the repository) first
on sys.path; it is dropped before anything else is imported, so a participant's `json.py` is
never what `import json` loads (the `autodev` command itself never has it there)."""

import os
import sys

if (
    not sys.flags.safe_path
    and sys.path
    and sys.path[0]
    and os.path.realpath(sys.path[0]) == os.path.realpath(os.getcwd())
):
    del sys.path[0]

from autodev.cli import main  # noqa: E402

main()
