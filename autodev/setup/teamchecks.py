"""`autodev doctor`'s checks of what the team uses: provider keys and endpoints, agent CLIs, MCP
servers, Chromium for the browser capability, telemetry; with the `Check` every check returns.
doctor.py runs them in order with the checks of the repository and the machine."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from autodev.errors import AutodevError
from autodev.store.paths import RunPaths

if TYPE_CHECKING:
    from autodev.config import Team

OK, WARN, FAIL = "ok", "warn", "FAIL"

# What litellm's validate_environment reports for `provider/...` models with nothing set.
# tests/test_doctor.py checks every row against litellm, so the table cannot drift unseen.
PROVIDER_KEYS: dict[str, list[str]] = {
    "openai": ["OPENAI_API_KEY"],
    "anthropic": ["ANTHROPIC_API_KEY"],
    "gemini": ["GOOGLE_API_KEY", "GEMINI_API_KEY"],
    "openrouter": ["OPENROUTER_API_KEY"],
    "mistral": ["MISTRAL_API_KEY"],
    "groq": ["GROQ_API_KEY"],
    "deepseek": ["DEEPSEEK_API_KEY"],
    "xai": ["XAI_API_KEY"],
    "together_ai": ["TOGETHERAI_API_KEY"],
    "fireworks_ai": ["FIREWORKS_AI_API_KEY"],
    "cohere": ["COHERE_API_KEY"],
    "perplexity": ["PERPLEXITYAI_API_KEY"],
    "cerebras": ["CEREBRAS_API_KEY"],
    "azure": ["AZURE_API_BASE", "AZURE_API_VERSION", "AZURE_API_KEY"],
    "bedrock": ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"],
    "vertex_ai": ["VERTEXAI_PROJECT", "VERTEXAI_LOCATION"],
    "huggingface": ["HUGGINGFACE_API_KEY"],
    "deepinfra": ["DEEPINFRA_API_KEY"],
    "ollama": [],  # litellm defaults the endpoint to the local server
    "ollama_chat": [],
}

MCP_START_SEC = 30.0  # the longest doctor waits for an MCP server's tool list


@dataclass
class Check:
    status: str  # ok, warn (start works, something optional is missing) or FAIL (start would not work)
    name: str
    detail: str
    fix: str = ""


def provider_checks(team: Team, env: Mapping[str, str], online: bool) -> list[Check]:
    from autodev.config import provider_problems

    unknown: list[str] = []

    def offline_lookup(model: str) -> tuple[list[str], str]:
        provider = model.split("/", 1)[0] if "/" in model else None
        if provider in PROVIDER_KEYS:
            return list(PROVIDER_KEYS[provider]), ""
        unknown.append(model)
        return [], ""

    lookup = None if online else offline_lookup
    out: list[Check] = []
    # (shown name, its models, its api_base, the team cut down to it)
    subjects: list[tuple[str, list[str], str | None, Team]] = [
        (
            f"provider: {p.name}",
            [m for m in (p.model, *p.failover) if m is not None],  # no agent: the team requires a model
            p.api_base,
            team.model_copy(update={"participants": [p], "audit": None}),
        )
        for p in team.participants
        if not p.agent  # a coding-agent CLI brings its own login
    ]
    if team.audit is not None:
        audit = team.audit
        subjects.append(
            (
                "provider: audit",
                [audit.model],
                audit.api_base,
                team.model_copy(update={"participants": [], "audit": audit}),
            )
        )
    for name, models, base, sub in subjects:
        unknown.clear()
        problems = provider_problems(sub, env, lookup=lookup)
        if problems:
            out.append(Check(FAIL, name, " | ".join(problems)))  # each sentence says what to set
            continue
        if base and online:
            out.append(reach_check(name, base))
        elif unknown:
            out.append(
                Check(
                    WARN,
                    name,
                    f"{', '.join(unknown)}: provider not known offline, key not checked",
                    'run `autodev doctor --online` (asks litellm), or write the model as "provider/model"',
                )
            )
        elif base:
            out.append(Check(OK, name, f"{', '.join(models)} at {base} (not contacted; --online checks it)"))
        else:
            out.append(Check(OK, name, f"{', '.join(models)}: what the provider needs is set"))
    return out


def reach_check(name: str, base: str) -> Check:
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(urllib.request.Request(base, method="GET"), timeout=5).close()
    except urllib.error.HTTPError:
        pass  # it answered: reachable, whatever it thinks of a bare GET
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        return Check(
            FAIL,
            name,
            f"{base} is not reachable ({reason})",
            "start the server, or fix api_base in team.toml",
        )
    return Check(OK, name, f"{base} answers")


def gemini_settings_problem(paths: RunPaths, env: Mapping[str, str]) -> str:
    """Why the Gemini CLI would not read autodev's settings file here ("" when it would)."""
    from autodev.agents.adapters import gemini_settings_folder

    folder, blocker = gemini_settings_folder(paths.run_dir / "agents", env)
    if blocker is None:
        return ""
    return (
        f"Gemini CLI 0.61.0 ignores a settings file below the world-writable {blocker}, so autodev's "
        f"MCP server (its post tool) would not reach it from {folder}"
    )


def agent_checks(team: Team, env: Mapping[str, str], team_paths: RunPaths) -> list[Check]:
    """Per agent CLI of each participant (its failovers too): found, its version, logged in.
    Only `--version` runs: no session starts and no model is called."""
    from autodev.agents import adapters

    out: list[Check] = []
    for p in team.participants:
        for i, agent in enumerate(p.agents()):
            name = f"agent: {p.name}" + (f" (failover {agent})" if i else "")
            ad = adapters.adapter(agent)
            path = adapters.find_binary(agent, env)
            if not path:
                out.append(
                    Check(
                        FAIL,
                        name,
                        f"the {agent} CLI is not on PATH (nor named by {ad.bin_env})",
                        f"install the {agent} CLI and log in, or set {ad.bin_env} to its path",
                    )
                )
                continue
            if agent == "gemini":
                blocked = gemini_settings_problem(team_paths, env)
                if blocked:
                    out.append(Check(FAIL, name, blocked, adapters.GEMINI_SETTINGS_FIX))
                    continue
            version = ad.version(path)
            logged, how = ad.login(env, p.api_key_env, path)
            detail = f"{agent} CLI at {path}, version {version or 'unknown'}; {how}"
            if version is None:
                out.append(Check(WARN, name, detail, f"`{path} --version` failed: check the installation"))
            elif not logged:
                fix = (
                    f"set {p.api_key_env} (api_key_env of {p.name})"
                    if p.api_key_env
                    else f"log in once with `{agent}` in a terminal, or set api_key_env for its API-key mode"
                )
                out.append(Check(WARN, name, detail, fix))
            else:
                out.append(Check(OK, name, detail))
    return out


def mcp_checks(paths: RunPaths, team: Team) -> list[Check]:
    """Each MCP server started as the daemon starts it (its folder, command, environment), its
    tool list read within its timeout_sec, then stopped."""
    servers = team.mcp
    if not servers:
        return []
    import tempfile

    from autodev.config import RunConfig, load_config
    from autodev.errors import ToolSetupError
    from autodev.guard import sandbox
    from autodev.harness.mcp import McpHub, start_fix, start_problem  # the same tests `start` applies

    try:  # the network confinement `start` gives them (a broken config or sandbox: reported above)
        cfg = load_config(paths.config_file)
        offline = sandbox.resolve(cfg.sandbox).offline
    except AutodevError:
        cfg, offline = RunConfig(), None
    out: list[Check] = []
    for name, server in servers.items():
        shown = f"mcp: {name}"
        problem = start_problem(name, server.command, paths.repo / (server.cwd or "."))
        if problem:
            out.append(Check(FAIL, shown, problem, start_fix(name)))
            continue
        with tempfile.TemporaryDirectory(prefix="autodev-doctor-") as logs:
            hub = McpHub(
                {name: server},
                repo=paths.repo,
                log_dir=Path(logs),
                network=cfg.command_network,
                offline=offline,
            )
            try:
                hub.start(timeout=min(server.timeout_sec, MCP_START_SEC))
            except ToolSetupError as e:
                said = e.message.split("\n  full log:")[0].replace("\n    ", " | ").replace("\n  ", "; ")
                out.append(Check(FAIL, shown, said, e.fix))
                continue
            try:
                tools = hub.tools()
            finally:
                hub.stop()
        found = shutil.which(server.command) or server.command
        out.append(Check(OK, shown, f"{' '.join([found, *server.args])}: started, {len(tools)} tools"))
    return out


def browser_checks(team: Team) -> list[Check]:
    """What `start` checks: Playwright importable and the Chromium it finds launched."""
    users = [p.name for p in team.participants if "browser" in p.tools]
    if not users:
        return []
    from autodev.harness.browser import chromium_path, fix_for, launch_problem

    why = launch_problem()
    if why:
        return [
            Check(FAIL, "browser", f"{', '.join(users)} use the browser capability, but {why}", fix_for(why))
        ]
    return [
        Check(
            OK,
            "browser",
            f"chromium at {chromium_path()} started through Playwright (for {', '.join(users)})",
        )
    ]


def telemetry_checks(paths: RunPaths) -> list[Check]:
    """When telemetry is on (an OTLP endpoint in the environment or [telemetry]): is the extra
    installed? Without it the run goes on untraced, as `start` warns: a warning, not a FAIL."""
    from autodev.config import load_config
    from autodev.telemetry import not_installed, resolve

    try:
        cfg = resolve(load_config(paths.config_file).telemetry)
    except AutodevError as e:
        return [Check(FAIL, "telemetry", e.message, e.fix)]
    if cfg is None:
        return []
    missing = not_installed(cfg)
    if missing is not None:
        return [Check(WARN, "telemetry", f"{missing.message}: the run would go on untraced", missing.fix)]
    return [Check(OK, "telemetry", f"OpenTelemetry installed; traces to {cfg.traces_url}")]
