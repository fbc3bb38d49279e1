"""python -m autodev.daemon REPO [STAGED_OBJECTIVE]: the detached daemon `start` spawns."""

import sys

from autodev.daemon.process import main

sys.exit(main())
