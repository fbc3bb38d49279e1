"""autodev: a team of LLM participants taking turns on one shared, append-only thread."""

import sys as _sys

# `python -m autodev…` puts the working directory (often a repository) first on sys.path. While
# the package is being located, argv[0] is "-m": drop that entry here, before any submodule
# imports anything, so a repository's `json.py` is never what autodev's `import json` loads.
# (A repository's own `autodev/` package is found before this file and cannot be stopped here:
# the `autodev` command never has the working directory on sys.path; docs/security.md.)
if _sys.argv[:1] == ["-m"] and not _sys.flags.safe_path and _sys.path and _sys.path[0]:
    import os as _os

    try:
        if _os.path.realpath(_sys.path[0]) == _os.path.realpath(_os.getcwd()):
            del _sys.path[0]
    except OSError:  # the working directory is gone: nothing to load from it
        pass

__version__ = "0.1.0"
