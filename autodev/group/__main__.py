"""`python -P -m autodev.group FOLDER`: the group's driver (driver.py), started detached by
`autodev start --best-of N` and `autodev start --resume-group ID`; keys come over a pipe."""

import sys
from pathlib import Path

from autodev.group.driver import drive
from autodev.guard import keys

keys.receive()
sys.exit(drive(Path(sys.argv[1])))
