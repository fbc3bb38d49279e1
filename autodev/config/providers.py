"""Provider requirements: which keys and endpoints the team's models need before a run starts."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import cast

from autodev.config.team import Team
from autodev.rules.names import is_scripted

# Providers whose litellm "missing key" is an endpoint with a local default, not a secret.
_LOCAL_DEFAULT_PROVIDERS = {"ollama", "ollama_chat"}
# Providers for which litellm lists alternatives: any one of them is enough.
_ANY_OF_PROVIDERS = {"gemini"}


def provider_problems(
    team: Team,
    environ: Mapping[str, str] | None = None,
    lookup: Callable[[str], tuple[list[str], str]] | None = None,
) -> list[str]:
    """One sentence per missing provider requirement of the team; empty when all is set.

    `environ` is checked for api_key_env variables and counts for provider keys too; litellm's
    own check reads the process environment (os.environ), which is also where the provider
    calls read keys, so pass os.environ (the default) outside tests of api_key_env.
    `lookup` replaces litellm's answer (the variables a model needs): `doctor` passes a table
    so that it runs without importing litellm.
    """
    env: Mapping[str, str] = os.environ if environ is None else environ
    missing_for = lookup or _litellm_missing
    problems: list[str] = []

    def check(who: str, model: str, api_base: str | None, api_key_env: str | None, where: str) -> None:
        if is_scripted(model):
            return
        if api_key_env:
            if not env.get(api_key_env):
                problems.append(
                    f"{who} (model {model}) needs {api_key_env}, named by api_key_env, but it "
                    f"is not set; set it in the environment or change api_key_env {where}"
                )
            return
        if api_base:
            return
        missing, error = missing_for(model)
        if error:
            problems.append(f"{who} (model {model}): {error}")
            return
        if model.split("/", 1)[0] in _ANY_OF_PROVIDERS and any(env.get(k) for k in missing):
            missing = []
        missing = [k for k in missing if not env.get(k)]
        if missing:
            problems.append(
                f"{who} (model {model}) needs {missing[0] if len(missing) == 1 else _join(missing, model)}; "
                f"set it in the environment or set api_key_env {where}"
            )

    for p in team.participants:
        where = "in .autodev/team.toml"
        # an agent CLI brings its own login (`autodev doctor` checks it); without one the
        # participant's validation has made sure of a model
        if not p.agent and p.model is not None:
            check(f'participant "{p.name}"', p.model, p.api_base, p.api_key_env, where)
        for m in p.models()[
            0 if p.agent else 1 :
        ]:  # reached with the participant's endpoint and key, as the harness does
            check(f'participant "{p.name}" failover', m, p.api_base, p.api_key_env, where)
    if team.audit is not None:  # without one, the audit runs on the first participant's model
        a = team.audit
        check("the audit", a.model, a.api_base, a.api_key_env, "in the [audit] table of .autodev/team.toml")
    # two failover lists can repeat the same sentence word for word
    return list(dict.fromkeys(problems))


def _join(keys: list[str], model: str) -> str:
    provider = model.split("/", 1)[0]
    return (" or " if provider in _ANY_OF_PROVIDERS else " and ").join(keys)


def _litellm_missing(model: str) -> tuple[list[str], str]:
    """(variables litellm reports missing for `model`, or an error sentence when it cannot tell)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm  # lazy: heavy, and not needed by send/status

    litellm.suppress_debug_info = True
    try:
        provider = litellm.get_llm_provider(model=model)[1]
    except Exception:
        return [], (
            "litellm does not recognise the provider of this model; write it as "
            '"provider/model" (e.g. "openai/gpt-5"), or set api_base for a custom '
            "endpoint"
        )
    if provider in _LOCAL_DEFAULT_PROVIDERS:
        return [], ""
    # "missing_keys" is a list of names
    found = litellm.validate_environment(model=model)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]  # litellm's annotation leaves the dict's values unknown
    result = cast("dict[str, list[str]]", found)
    return list(result.get("missing_keys") or []), ""
