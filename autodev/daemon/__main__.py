"""python -m autodev.daemon REPO [STAGED_OBJECTIVE]: the detached daemon `start` spawns (with
-P, outside the repository; a hand-started one drops its working directory from sys.path too)."""

import os
import sys

if (
    not sys.flags.safe_path
    and sys.path
    and sys.path[0]
    and os.path.realpath(sys.path[0]) == os.path.realpath(os.getcwd())
):
    del sys.path[0]

from autodev.daemon.process import main  # noqa: E402

sys.exit(main())
