"""What makes a bundle's `.autodev/` safe to run (shared by `bundle` and `replay`).

A bundle cannot widen anything (SPEC §21): its config keeps only what steers the run's pace and
limits; what decides where a command may reach, read or write, which commands are gated and
what runs besides the team's turns is the safe default, whatever the bundle says. The lists are
allow-lists: a key that is not named here (a new one included) is dropped, and its default
applies, so a key added to the config later cannot slip through a bundle.
"""

from __future__ import annotations

import shutil
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import TypeGuard

import tomli_w

from autodev.errors import UsageError
from autodev.store.journal import is_object

__all__ = ["BundleRefused", "install_config", "safe_config"]


class BundleRefused(UsageError):
    """A bundle that is not safe or not whole (exit 2)."""


# config.toml keys kept as recorded: pace, limits and what the audit reads (its `auditCheck`
# runs in the sandbox, like every replayed command); none reaches outside the sandbox.
KEPT = frozenset(
    {
        "waitFirstSec",
        "waitCapSec",
        "maxWaitMin",
        "maxAcceptChecks",
        "maxTalkTurns",
        "maxStepsPerTurn",
        "turnTimeoutMin",
        "commandTimeoutSec",
        "auditCheck",
        "maxRetries",
        "retryBackoffSec",
        "maxSilentTurns",
        "auditDiffChars",
        "maxCostUsd",
        "maxTokens",
        "maxOutputTokens",
        # these only ever refuse more
        "gateAutoDeny",
        "gateRequiredTools",
    }
)
# Lists a bundle may add to but not take from: the defaults stay in them.
NARROWED = ("gateRequired", "secretFiles")
# Set whatever the bundle says: the sandbox (no bubblewrap, no replay), no network, every gate
# decided by a person (the recording's own decisions are fed back as it made them), agent CLIs
# gated (replay runs none: its stand-in plays them).
FORCED: dict[str, object] = {
    "sandbox": "bwrap",
    "commandNetwork": False,
    "gateMode": "gated",
    "gateOpaque": "gated",
    "agentsGated": True,
}
# Dropped, so their defaults apply (docs/rewind.md lists them): gateAutoApprove, networkAllow,
# sandboxExpose (and any other path the sandbox would show), hooks, notifyCommand, notifyUrl,
# notifyTimeoutSec, telemetry (an endpoint, captureContent), and every key not named above.

# A participant keeps who it is and its limits; its tools (browser, MCP), endpoint, key name,
# network, CLI arguments and permission go. An audit keeps its model and effort.
PARTICIPANT_KEPT = frozenset(
    {
        "name",
        "model",
        "agent",
        "effort",
        "write",
        "lane",
        "failover",
        "max_cost_usd",
        "max_tokens",
        "max_output_tokens",
        "context",
    }
)
AUDIT_KEPT = frozenset({"model", "effort"})


def install_config(src: Path, target: Path) -> None:
    """`src` (a run's .autodev/) as `target`, the .autodev/ of a clone or worktree made from a
    commit, replacing whatever that commit holds there: a participant can commit a `.autodev` of
    its own with git plumbing (a config with `sandbox = "off"` or hooks, or a symbolic link to a
    host folder the copy would be written through), and a bundle's repository can hold anything."""
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)
    shutil.copytree(src, target)


def _load(path: Path, member: str) -> dict[str, object]:
    try:
        return tomllib.loads(path.read_text()) if path.exists() else {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise BundleRefused(
            f"the bundle's {member} is not readable TOML ({str(e).splitlines()[0] if str(e) else 'too deep'})",
            "give a file `autodev runs export` wrote",
        ) from None


def safe_config(config_dir: Path) -> None:
    """A bundle's .autodev/ (its `config/` folder) made safe to run, in place."""
    from autodev.config.run import RunConfig

    cfg = config_dir / "config.toml"
    data = _load(cfg, "config/config.toml")
    out: dict[str, object] = {k: v for k, v in data.items() if k in KEPT}
    for key in NARROWED:
        default: list[str] = RunConfig.model_fields[_field(key)].get_default(call_default_factory=True)
        extra = data.get(key)
        added = [p for p in _items(extra) if isinstance(p, str) and p not in default]
        out[key] = [*default, *added]
    out |= FORCED
    cfg.write_text(tomli_w.dumps(out))

    team_file = config_dir / "team.toml"
    team = _load(team_file, "config/team.toml")
    safe: dict[str, object] = {}
    people = team.get("participants")
    if is_array(people):
        safe["participants"] = [_kept(p, PARTICIPANT_KEPT) for p in people]
    if is_object(audit := team.get("audit")):
        safe["audit"] = _kept(audit, AUDIT_KEPT)
    scripted = team.get("scripted")
    if is_object(scripted):
        path = scripted.get("path", "script.toml")
        # the script is read from the bundle's own config folder, never from elsewhere on the host
        if not isinstance(path, str) or not (config_dir / path).resolve().is_relative_to(
            config_dir.resolve()
        ):
            raise BundleRefused(
                f"the bundle's config/team.toml names a script outside its folder ({path!r})",
                "give a file `autodev runs export` wrote",
            )
        safe["scripted"] = {"path": path}
    # `mcp` (servers started with the daemon) and every other table are dropped
    team_file.write_text(tomli_w.dumps(safe))
    _check(cfg, team_file)


def is_array(value: object) -> TypeGuard[list[object]]:
    """`value`, parsed from TOML or JSON, is an array."""
    return isinstance(value, list)


def _items(value: object) -> list[object]:
    """A TOML array's items (anything else: none)."""
    return value if is_array(value) else []


def _kept(value: object, keys: Iterable[str]) -> object:
    """A TOML table (its keys are strings, as a JSON object's) with only `keys`; anything else
    as it is."""
    return {k: v for k, v in value.items() if k in keys} if is_object(value) else value


def _check(cfg: Path, team_file: Path) -> None:
    """What is left is a config the daemon takes: refused here, naming the bundle's file, rather
    than in the middle of the replay."""
    from autodev.config import load_config, load_team
    from autodev.errors import ConfigError
    from autodev.guard.display import line, shown

    for path, load in ((cfg, load_config), (team_file, load_team)):
        try:
            load(path)
        except ConfigError as e:
            # one line, without the temporary folder's path, escaped (the values are the bundle's)
            first = line((e.message.splitlines() or [""])[0].removeprefix(f"{path}: "))
            raise BundleRefused(
                f"the bundle's config/{path.name} is not valid: {first}", shown(e.fix)
            ) from None


def _field(alias: str) -> str:
    from autodev.config.run import RunConfig

    return next(name for name, f in RunConfig.model_fields.items() if f.alias == alias)
