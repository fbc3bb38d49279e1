"""Where the daemon's time per turn goes, outside the model: a scripted run under py-spy, its
samples sorted into fsync, git, state.json renames and the rest (Python).

    pip install py-spy                      # anywhere: py-spy is one binary, not a dependency
    .venv/bin/python bench/profile.py [TURNS] [--py-spy PATH]

Idle samples are kept (`--idle`): an fsync or a git child is waiting, not computing. Samples in
the model request (litellm, HTTP, the scripted server) and in imports (litellm's, once) are
left out, so the shares are of the daemon's own time per turn.
"""

from __future__ import annotations

import collections
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.live import env_for, make_repo, rotation_steps  # noqa: E402
from bench.runs import MAX_TALK, OBJECTIVE  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def _source(frame: str) -> str:
    """The source line a py-spy frame ("Journal.append (autodev/store/journal.py:166)") points at:
    for a C call such as os.fsync, py-spy names the Python line that made it."""
    import linecache

    if " (" not in frame:
        return ""
    path, _, no = frame.rsplit(" (", 1)[1].rstrip(")").rpartition(":")
    return linecache.getline(str(REPO / path), int(no)) if no.isdigit() else ""


def categorize(raw: str) -> tuple[int, collections.Counter]:
    """Samples of py-spy's raw (collapsed) output inside the daemon loop, by category."""
    cats: collections.Counter = collections.Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, n = line.rpartition(" ")
        if "Loop.loop (" not in stack or "_find_and_load" in stack or "warm (" in stack:
            continue  # not the daemon's loop, or an import (litellm's is warmed once)
        frames = stack.split(";")
        ours = [f for f in frames if "(autodev/" in f]
        if ours and ours[-1].startswith("_ask (") and frames[-1].startswith("Condition.wait ("):
            continue  # the turn's thread waiting for the model request (run on its own thread)
        total += int(n)
        src = _source(stack.split(";")[-1])
        if "fsync_dir" in stack or "fsync(" in src:
            cat = "fsync (log appends, state.json and its directory)"
        elif "git/" in stack or "Git." in stack or "subprocess" in stack:
            cat = "git (baseline and credit)"
        elif "os.replace(" in src:
            cat = "rename (state.json)"
        else:
            cat = "python (json, prompt, scheduler, ...)"
        cats[cat] += int(n)
    return total, cats


def main(argv: list[str]) -> int:
    turns = int(next((a for a in argv if a.isdigit()), "60"))
    spy = argv[argv.index("--py-spy") + 1] if "--py-spy" in argv else shutil.which("py-spy")
    if not spy:
        print(
            "bench/profile.py: py-spy not found; `pip install py-spy` or pass --py-spy PATH", file=sys.stderr
        )
        return 2
    with tempfile.TemporaryDirectory(prefix="autodev-profile-") as tmp:
        root = Path(tmp)
        repo = make_repo(root, rotation_steps(turns), {"maxTalkTurns": min(2 * turns + 10, MAX_TALK)})
        out = root / "profile.txt"
        cmd = [spy, "record", "--idle", "--rate", "200", "--format", "raw", "-o", str(out), "--"]
        cmd += [sys.executable, "-m", "autodev", "start", "--foreground", "--until-idle", OBJECTIVE]
        r = subprocess.run(cmd, cwd=repo, env=env_for(root / "home"), capture_output=True, text=True)
        if r.returncode != 0:
            print(f"py-spy run exited {r.returncode}:\n{r.stderr[-2000:]}", file=sys.stderr)
            return 1
        total, cats = categorize(out.read_text())
    print(f"{turns}-turn scripted run, {total} samples in the daemon loop outside the model:")
    for cat, n in cats.most_common():
        print(f"  {n / total:6.1%}  {cat}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
