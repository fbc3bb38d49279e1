"""What an agent CLI reads from the repository (its working directory) that can run a program on
the host, and the check that none of it was planted during the run.

An agent CLI runs outside the sandbox, as the user, started in the repository. What each one
honours there, and how autodev stops it (the table is in docs/security.md):

- claude: `.claude/settings.json` and `.claude/settings.local.json` (hooks, `apiKeyHelper`,
  `env`, MCP servers), `.mcp.json`: not read (`--setting-sources user`, `--strict-mcp-config`
  with autodev's own server file).
- gemini: `.gemini/settings.json` (MCP servers, hooks, tool discovery commands) and `.env` /
  `.gemini/.env`: honoured in a trusted folder (autodev passes `--skip-trust` so the approval
  mode holds); the run's system settings allow only autodev's MCP server (`mcp.allowed`), and a
  file planted during the run stops the turn (below).
- codex: `.codex/config.toml` (MCP servers, hooks) when the user trusted the project;
  copilot: `.mcp.json`, `.github/mcp.json`, `.github/hooks/`, `.copilot/`. No flag turns these
  off in the pinned versions: a file planted during the run stops the turn (below).

The check: the first time a run (this process) looks, it stamps each CLI's paths (what exists
then is the user's); before every CLI invocation the stamp is compared, and a path created or
changed since is refused (`RepositoryRefused`, the run pauses) naming it and the fix.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from autodev.errors import RepositoryRefused

PLANTABLE: dict[str, tuple[str, ...]] = {
    "claude": (),  # flags keep the repository's settings out
    "codex": (".codex",),
    "copilot": (".mcp.json", ".github/mcp.json", ".github/hooks", ".copilot", ".vscode/mcp.json"),
    "gemini": (".gemini", ".env"),
}
MAX_FILES = 500  # a stamp of a folder looks at this many files at most (a huge .codex is odd)

_stamps: dict[tuple[str, str], str] = {}


def _stamp(path: Path) -> str:
    """A digest of what `path` holds: "-" when absent; a folder's files, names and contents."""
    h = hashlib.sha256()
    if not os.path.lexists(path):
        return "-"
    if path.is_symlink():
        return "link:" + os.readlink(path)
    if path.is_dir():
        seen = 0
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(files):
                seen += 1
                if seen > MAX_FILES:
                    return h.hexdigest() + "+"
                f = Path(root) / name
                h.update(str(f.relative_to(path)).encode() + b"\0" + _stamp(f).encode() + b"\0")
        return h.hexdigest()
    if not path.is_file():
        return "special"
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def pin(repo: Path) -> None:
    """Stamp every CLI's paths now (the daemon, at run start)."""
    real = os.path.realpath(repo)
    for paths in PLANTABLE.values():
        for rel in paths:
            _stamps[(real, rel)] = _stamp(Path(real) / rel)


def check(repo: Path, agent: str) -> None:
    """RepositoryRefused when a path `agent` would honour changed since the run's stamp."""
    real = os.path.realpath(repo)
    for rel in PLANTABLE.get(agent, ()):
        now = _stamp(Path(real) / rel)
        was = _stamps.setdefault((real, rel), now)
        if now != was:
            raise RepositoryRefused(
                f"{rel} in the repository changed during the run; the {agent} CLI would honour it "
                "outside the sandbox (MCP servers, hooks and other programs it names)",
                f"look at {rel}: delete or restore it if a participant wrote it; if you changed it, "
                "`autodev stop` and `autodev start` (a run trusts what is there when it starts)",
            )
