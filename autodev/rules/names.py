"""Names with a meaning of their own: the thread's reserved authors, the participant name rule,
and the marker of the offline scripted model. Pure constants, so the scheduler can import them."""

RESERVED = ("user", "system", "audit")
NAME_PATTERN = r"^[a-z][a-z0-9_-]{0,31}$"
SCRIPTED = "scripted"


def is_scripted(model: str) -> bool:
    """ "scripted", or "scripted:LABEL" (a second scripted model, e.g. as a failover)."""
    return model == SCRIPTED or model.startswith(SCRIPTED + ":")


# The environment variable that tells a run its number in a best-of group (`start --best-of`,
# `eval --best-of`): a scripted script's `runs = [...]` steps answer only in those runs.
RUN_INDEX = "AUTODEV_RUN_INDEX"
