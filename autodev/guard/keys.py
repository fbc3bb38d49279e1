"""The daemon's key store: provider keys live here, never in its environment.

Unsetting a variable does not change /proc/<pid>/environ, and a child started without an
explicit environment inherits os.environ. So `start` removes every secret (autodev/guard/redact.py
decides what is one) from the daemon's environment before it exists and hands the values
over through a pipe (`handover` / `receive`); they reach litellm per request as arguments
(`litellm_kwargs`). `start --foreground` re-executes itself the same way (see cli.start).

A process that received nothing (a library caller, a test building a Daemon directly) falls
back to the secrets in its own environment, so the same code serves both.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from typing import TypeGuard, cast

from autodev.guard.redact import is_secret_name, scrubbed_env, secret_values

FD_ENV = "AUTODEV_KEYS_FD"
_PIPE_MAX = 60000  # a pipe holds 64 KiB before a write blocks; keys are far smaller

_store: dict[str, str] | None = None  # None: nothing was handed over


def handover(extra: Iterable[str] = (), base: Mapping[str, str] | None = None) -> tuple[dict[str, str], int]:
    """(an environment without secrets, the read end of a pipe holding them) for a child that
    gets `pass_fds=(fd,)` (or inherits it across exec). The caller closes `fd` afterwards."""
    source = dict(os.environ if base is None else base)
    values = secret_values(source, extra)
    data = json.dumps(values).encode()
    if len(data) > _PIPE_MAX:
        from autodev.errors import UsageError

        raise UsageError(
            f"the secret variables in the environment add up to {len(data)} bytes, more than "
            f"the {_PIPE_MAX} autodev hands to its daemon",
            "unset the secret variables autodev does not need, then start again",
        )
    r, w = os.pipe()
    try:
        os.write(w, data)
    finally:
        os.close(w)
    os.set_inheritable(r, True)
    env = scrubbed_env(extra, source)
    env[FD_ENV] = str(r)
    return env, r


def receive() -> bool:
    """Read the keys handed over through the fd named by AUTODEV_KEYS_FD, if any. True when
    keys were received (possibly none)."""
    global _store
    raw = os.environ.pop(FD_ENV, None)
    if raw is None:
        return False
    fd = int(raw)
    chunks: list[bytes] = []
    try:
        while True:
            b = os.read(fd, 65536)
            if not b:
                break
            chunks.append(b)
    finally:
        os.close(fd)
    data = json.loads(b"".join(chunks) or b"{}")
    _store = {str(k): str(v) for k, v in data.items()}
    return True


def received() -> bool:
    return _store is not None


def set_store(values: Mapping[str, str] | None) -> None:
    """Replace the store (tests; None goes back to reading the environment)."""
    global _store
    _store = None if values is None else dict(values)


def all_keys(extra: Iterable[str] = ()) -> dict[str, str]:
    """name -> value of every key this process holds (the store, else its environment)."""
    if _store is not None:
        return dict(_store)
    return secret_values(os.environ, extra)


def get(name: str) -> str | None:
    """A key by name: from the store, else (a variable no rule calls secret) the environment."""
    if _store is not None and name in _store:
        return _store[name]
    return os.environ.get(name)


def values(extra: Iterable[str] = ()) -> list[str]:
    return list(all_keys(extra).values())


# litellm's own keyword for variables it would otherwise read from the environment.
_KWARG_OF = {
    "AWS_ACCESS_KEY_ID": "aws_access_key_id",
    "AWS_SECRET_ACCESS_KEY": "aws_secret_access_key",
    "AWS_SESSION_TOKEN": "aws_session_token",
    "GOOGLE_APPLICATION_CREDENTIALS": "vertex_credentials",
    "VERTEX_CREDENTIALS": "vertex_credentials",
}


def litellm_kwargs(model: str) -> dict[str, str]:
    """The credentials of `model` as litellm arguments, for a daemon whose environment has no
    keys: the variables litellm reports missing are looked up in the store. A provider needing
    one key gets `api_key`; AWS and Vertex credentials get their own keywords."""
    if _store is None:
        return {}  # the keys are in the environment, where litellm reads them itself
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    # litellm declares a bare `dict`: typed here, at its edge, as what it is (names to values)
    check = cast("Callable[..., Mapping[str, object]]", litellm.validate_environment)
    try:
        missing = _names(check(model=model).get("missing_keys"))
    except Exception:  # an unknown provider: the request itself will say what is wrong
        return {}
    found = [n for n in missing if is_secret_name(n) and _store.get(n)]
    out: dict[str, str] = {}
    for n in found:
        if n in _KWARG_OF:
            out[_KWARG_OF[n]] = _store[n]
    plain = [n for n in found if n not in _KWARG_OF]
    if plain:
        out["api_key"] = _store[plain[0]]  # "any of" providers (gemini) list alternatives
    if model.startswith("vertex") and "vertex_credentials" not in out:
        # Vertex reads a credentials file named by a variable litellm does not report missing.
        for n in ("VERTEX_CREDENTIALS", "GOOGLE_APPLICATION_CREDENTIALS"):
            if _store.get(n):
                out["vertex_credentials"] = _store[n]
                break
    return out


def _names(missing: object) -> list[str]:
    """The variable names litellm's `missing_keys` lists (none when it lists nothing)."""
    return [str(n) for n in missing] if _is_names(missing) else []


def _is_names(value: object) -> TypeGuard[list[object] | tuple[object, ...]]:
    return isinstance(value, (list, tuple))


def env_for(names: Iterable[str], base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a process that may hold exactly the secrets `names` (an MCP server's
    `env` list, an agent CLI's key): every other secret is left out."""
    from autodev.guard.redact import only_named

    names = list(names)
    return only_named(names, all_keys(names), base)
