"""The teams and the run settings of an eval: each `--team FILE` read and checked once, carried to
every run as text (a Ray worker needs no access to the team files), with a digest for resume."""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import tomli_w

from autodev.errors import UsageError

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class TeamSpec:
    """A team as the eval carries it: its name (the file's stem), team.toml and script as text."""

    name: str
    team_toml: str
    script: str | None = None  # the scripted model's script, when the team uses it

    def digest(self) -> str:
        return hashlib.sha256(f"{self.team_toml}\0{self.script or ''}".encode()).hexdigest()[:16]

    def install(self, config_dir: Path) -> None:
        """Write team.toml (and script.toml) into a clone's `.autodev/`."""
        config_dir.mkdir(parents=True, exist_ok=True)
        (config_dir / "team.toml").write_text(self.team_toml)
        if self.script is not None:
            (config_dir / "script.toml").write_text(self.script)


@dataclass(frozen=True)
class Caps:
    """The caps the eval sets on every run: through the budget keys, and wall time by stopping."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None
    max_wall_min: float | None = None


@dataclass(frozen=True)
class RunSettings:
    """What every run of the eval shares besides its task and team."""

    caps: Caps = field(default_factory=Caps)
    config: dict[str, object] = field(
        default_factory=dict[str, object]
    )  # the base config.toml keys (--config)
    setup_timeout_s: float = 1800
    test_timeout_s: float = 1800
    stop_grace_s: float = 60  # after `autodev stop` at the wall cap, how long before kill -9
    # --grade-unsandboxed: setup and tests run on the host (no bwrap here). Not in the digest:
    # where a grade ran does not change what it is.
    grade_unsandboxed: bool = False

    def config_toml(self) -> str:
        keys = dict(self.config)
        if self.caps.max_cost_usd is not None:
            keys["maxCostUsd"] = self.caps.max_cost_usd
        if self.caps.max_tokens is not None:
            keys["maxTokens"] = self.caps.max_tokens
        return tomli_w.dumps(keys)

    def digest(self) -> str:
        shape = {"caps": self.caps.__dict__, "config": self.config}
        return hashlib.sha256(json.dumps(shape, sort_keys=True, default=str).encode()).hexdigest()[:16]


def load_team_spec(path: Path) -> TeamSpec:
    """A `--team` file, checked as `autodev start` checks it; its script folded in."""
    from autodev.config import load_team

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"--team {path}: no such file", "name a team TOML file (e.g. teams/pair.toml)")
    name = path.stem
    if not _NAME.match(name):
        raise UsageError(
            f"--team {path}: {name!r} cannot name a team", "rename the file: letters, digits, . _ -"
        )
    team = load_team(path)  # ConfigError names the file and the key
    team.audit_model()  # a team of agent CLIs only must name its audit's model, as start checks
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    script = None
    if team.uses_scripted():
        from autodev.scripted import load_script

        script_path = team.script_path(path)
        load_script(script_path)
        script = script_path.read_text(encoding="utf-8")
        data["scripted"] = {**data.get("scripted", {}), "path": "script.toml"}
    return TeamSpec(name, tomli_w.dumps(data), script)


def key_problems(path: Path) -> list[str]:
    """What a team's providers need and this environment lacks (keys named by api_key_env, the
    providers' usual variables), checked offline as `autodev doctor` does: litellm is not imported."""
    from autodev.config import load_team, provider_problems
    from autodev.setup.doctor import PROVIDER_KEYS

    def offline(model: str) -> tuple[list[str], str]:
        provider = model.split("/", 1)[0] if "/" in model else None
        return list(PROVIDER_KEYS.get(provider or "", [])), ""

    return provider_problems(load_team(Path(path)), lookup=offline)


def team_key_problems(teams: list[TeamSpec]) -> list[str]:
    """`key_problems` of each team as the runs get it (its team.toml installed in a scratch
    folder), in this process's environment: the eval's own on this machine, a worker's in a Ray
    task. Each problem is prefixed with the team's name."""
    import tempfile

    out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="autodev-eval-keys-") as tmp:
        for team in teams:
            folder = Path(tmp) / team.name
            team.install(folder)
            out += [f"team {team.name}: {p}" for p in key_problems(folder / "team.toml")]
    return out


def load_teams(paths: list[Path]) -> list[TeamSpec]:
    if not paths:
        raise UsageError("no team given", "pass --team FILE at least once (e.g. --team teams/pair.toml)")
    teams = [load_team_spec(p) for p in paths]
    names = [t.name for t in teams]
    for n in names:
        if names.count(n) > 1:
            raise UsageError(
                f"two --team files are both named {n!r} (a team is named by its file's stem)",
                "copy one to a file of another name",
            )
    return teams


def load_base_config(path: Path | None) -> dict[str, object]:
    """`--config FILE`: config.toml keys every run gets, checked like a run's config."""
    if path is None:
        return {}
    from autodev.config import load_config

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"--config {path}: no such file", "name a config.toml (docs/CONFIG.md)")
    load_config(path)
    return tomllib.loads(path.read_text(encoding="utf-8"))
