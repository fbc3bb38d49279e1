"""Which sandbox this machine gives the `sandbox` config key: bubblewrap found, probed (and,
for `status`, the probe's answer remembered in the run folder) or why not. What the room
inside looks like is guard/sandbox.py's; this module is what `status` needs of it, kept free
of that module's imports (subprocess, dataclasses, the mounts) so a cold status stays quick.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NamedTuple, cast

from autodev.errors import ConfigError
from autodev.store.memo import read_memo, write_memo

MODES = ("auto", "bwrap", "off")
PACKAGE = "bubblewrap"  # the Debian/Ubuntu/Fedora/Arch package that ships bwrap
# Where to find bwrap when not on PATH under that name (a test points it at nothing to see
# the warning path; a user can point it at a build of their own).
BWRAP_ENV = "AUTODEV_BWRAP"

_probed: dict[str, str] = {}  # bwrap path -> "" when it works here, else why not

# What to do about a bwrap that is installed but cannot build the sandbox (most often: the
# kernel, AppArmor or a container's seccomp profile forbids unprivileged user namespaces).
BROKEN_FIX = (
    "let unprivileged users create namespaces (`sysctl -w kernel.unprivileged_userns_clone=1`; on "
    "Ubuntu 24.04 and later `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`; in a "
    "container, a seccomp profile that allows unshare/clone with namespaces), or set "
    'sandbox = "off" in .autodev/config.toml to run commands unsandboxed'
)


class Found(NamedTuple):
    """Which sandbox the config key gives here (guard/sandbox.py's Sandbox adds the room): a
    named tuple, not a dataclass, so `status` pays no dataclasses import for its one line."""

    mode: str  # what the config asks for: auto | bwrap | off
    binary: str | None  # the bwrap in use, None when commands run unsandboxed
    problem: str = ""  # why there is none although one was wanted

    @property
    def active(self) -> bool:
        return self.binary is not None

    def describe(self) -> str:
        """One line for `start`, status and the panel."""
        if self.active:
            return f"bubblewrap ({self.binary})"
        if self.mode == "off":
            return 'off (sandbox = "off" in .autodev/config.toml): commands run unsandboxed'
        return f"none: {self.problem}"

    @property
    def warning(self) -> str | None:
        """What start, status and the panel header warn about; None when all is as configured."""
        if self.active or self.mode == "off":
            return None
        return (
            f"commands run UNSANDBOXED: {self.problem}; install the `{PACKAGE}` package "
            '(e.g. `apt-get install bubblewrap`), or set sandbox = "off" in .autodev/config.toml '
            "to silence this"
        )

    def as_dict(self) -> dict[str, str | bool | None]:
        return {
            "mode": self.mode,
            "active": self.active,
            "describe": self.describe(),
            "warning": self.warning,
        }


def find_bwrap() -> str | None:
    import shutil

    override = os.environ.get(BWRAP_ENV)
    if override is not None:
        return override if override and os.access(override, os.X_OK) else None
    return shutil.which("bwrap")


def probe(binary: str) -> str:
    """Empty when `binary` can build the sandbox here, else the reason (e.g. user namespaces are
    disabled, or a container without the rights to mount /proc). Cached per process."""
    if binary in _probed:
        return _probed[binary]
    import subprocess
    import tempfile

    from autodev.guard.mounts import bwrap_args

    with tempfile.TemporaryDirectory() as d:
        argv = [binary, *bwrap_args(Path(d)), "--", "true"]
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
            why = "" if r.returncode == 0 else f"{binary} does not work here: {r.stderr.strip()[:300]}"
        except (OSError, subprocess.TimeoutExpired) as e:
            why = f"{binary} does not work here: {e}"
    _probed[binary] = why
    return why


# What a probe's answer depends on besides the binary, that can change without a reboot: the
# kernel's switches for unprivileged user namespaces (where the kernel has them).
USERNS_SWITCHES = (
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
)


def probe_key(binary: str) -> str | None:
    """A fingerprint of what `probe(binary)`'s answer depends on, cheap to read: the binary's
    identity, this boot, and the user-namespace switches. None when it cannot be read."""
    try:
        st = os.stat(binary)
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None
    switches: list[str] = []
    for f in USERNS_SWITCHES:
        try:
            switches.append(Path(f).read_text().strip())
        except OSError:
            switches.append("-")  # this kernel has no such switch
    return f"{binary}|{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}|{boot}|{','.join(switches)}"


def remembered_probe(binary: str, memo: Path) -> str:
    """`probe(binary)`, answered from `memo` while its key still holds (a probe runs bwrap:
    about 17 ms of a cold `status`). Only `status` uses it; `start` always probes."""
    key = probe_key(binary)
    if key is None:
        return probe(binary)
    kept = read_memo(memo)  # None: none yet, or cut by a crash: probe again
    entry = cast("dict[str, object]", kept) if isinstance(kept, dict) else {}
    if entry.get("key") == key and isinstance(why := entry.get("why"), str):
        _probed[binary] = why
        return why
    why = probe(binary)
    write_memo(memo, {"key": key, "why": why})
    return why


def which(mode: str, memo: Path | None = None) -> Found:
    """What the `sandbox` config key gives on this machine. `"bwrap"` without a working bwrap
    is a ConfigError (start refuses); `"auto"` falls back to none with a warning. With `memo`
    (status), an earlier probe's answer is reused while nothing it depends on changed."""
    if mode not in MODES:
        raise ConfigError(
            f"sandbox = {mode!r} is not one of {', '.join(MODES)}",
            'set sandbox = "auto" (the default), "bwrap" or "off" in .autodev/config.toml',
        )
    if mode == "off":
        return Found("off", None)
    if not sys.platform.startswith("linux"):
        problem = f"no sandbox is available on {sys.platform} (bubblewrap needs Linux)"
    else:
        binary = find_bwrap()
        if binary is None:
            problem = f"bwrap was not found (the `{PACKAGE}` package provides it)"
        else:
            problem = probe(binary) if memo is None else remembered_probe(binary, memo)
            if not problem:
                return Found(mode, binary)
    if mode == "bwrap":
        raise ConfigError(
            f'sandbox = "bwrap" in .autodev/config.toml, but {problem}',
            f"install the `{PACKAGE}` package (e.g. `apt-get install bubblewrap`), or set "
            'sandbox = "auto" to run unsandboxed with a warning',
        )
    return Found(mode, None, problem)
