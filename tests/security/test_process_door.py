"""Issue 29, "one door for processes": autodev starts a process only through autodev/host/spawn.py,
and every start there names a reason that lists its module (the table of who runs what on the
host, and why that is safe, cannot drift from the code). guard/sandbox.py and guard/bwrap.py,
which build and probe the sandbox, are the other modules allowed to start a process."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import autodev
from autodev.host import spawn

PKG = Path(autodev.__file__).parent
DOOR = PKG / "host" / "spawn.py"
ALLOWED = {DOOR, PKG / "guard" / "sandbox.py", PKG / "guard" / "bwrap.py"}

FORBIDDEN_MODULES = {"subprocess", "pty", "multiprocessing"}
FORBIDDEN_OS = ("exec", "spawn", "posix_spawn", "system", "popen", "fork")
FORBIDDEN_ASYNCIO = ("create_subprocess_exec", "create_subprocess_shell")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources() -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text(), str(p)) for p in sorted(PKG.rglob("*.py"))}


def starts(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, what) for every way of starting a process other than the door in `tree`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [
                (node.lineno, f"import {a.name}")
                for a in node.names
                if a.name.split(".")[0] in FORBIDDEN_MODULES
            ]
        elif isinstance(node, ast.ImportFrom) and node.module:
            top = node.module.split(".")[0]
            if top in FORBIDDEN_MODULES:
                found.append((node.lineno, f"from {node.module} import …"))
            for a in node.names:
                if (top == "os" and a.name.startswith(FORBIDDEN_OS)) or (
                    top == "asyncio" and a.name in FORBIDDEN_ASYNCIO
                ):
                    found.append((node.lineno, f"from {node.module} import {a.name}"))
        elif isinstance(node, ast.Attribute) and node.attr in ("subprocess_exec", "subprocess_shell"):
            found.append((node.lineno, f"….{node.attr}"))  # an event loop's own process start
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            base, attr = node.value.id, node.attr
            if (base == "os" and attr.startswith(FORBIDDEN_OS)) or (
                base == "asyncio" and attr in FORBIDDEN_ASYNCIO
            ):
                found.append((node.lineno, f"{base}.{attr}"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__":
            found.append((node.lineno, "__import__(…)"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and str(node.args[0].value).split(".")[0] in FORBIDDEN_MODULES
        ):
            found.append((node.lineno, f"import_module({node.args[0].value!r})"))
    return found


def reasons(arg: ast.expr | None) -> list[str | None]:
    """The reasons a call's argument can be: a literal, or each branch of `a if c else b`."""
    if isinstance(arg, ast.IfExp):
        return reasons(arg.body) + reasons(arg.orelse)
    return [arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None]


def door_calls(tree: ast.Module) -> list[tuple[int, str, str | None]]:
    """(line, function, reason or None when it is not a literal) for every spawn.run/popen/execve."""
    out = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "spawn"
            and node.func.attr in ("run", "popen", "execve")
        ):
            position = 2 if node.func.attr == "execve" else 1
            arg = next((k.value for k in node.keywords if k.arg == "why"), None)
            if arg is None and len(node.args) > position:
                arg = node.args[position]
            out += [(node.lineno, node.func.attr, why) for why in reasons(arg)]
    return out


def test_no_module_but_the_door_and_the_sandbox_starts_a_process():
    found = [
        f"{path.relative_to(PKG.parent)}:{line}: {what}"
        for path, tree in sources().items()
        if path not in ALLOWED
        for line, what in starts(tree)
    ]
    assert not found, "start processes through autodev/host/spawn.py (run, popen, execve):\n" + "\n".join(
        found
    )


def test_every_start_names_a_reason_that_lists_its_module():
    used: dict[str, set[str]] = {}
    problems = []
    for path, tree in sources().items():
        for line, fn, why in door_calls(tree):
            where = f"{path.relative_to(PKG.parent)}:{line}: spawn.{fn}"
            if why is None:
                problems.append(f"{where} names no literal reason")
            elif why not in spawn.WHY:
                problems.append(f"{where} names {why!r}, which is not in spawn.WHY")
            elif module_name(path) not in spawn.WHY[why].callers:
                problems.append(f"{where}: add {module_name(path)} to spawn.WHY[{why!r}].callers, with why")
            else:
                used.setdefault(why, set()).add(module_name(path))
    assert not problems, "\n".join(problems)
    # and the table lists no caller that does not call: it says exactly who starts what
    listed = {why: set(r.callers) for why, r in spawn.WHY.items()}
    assert listed == used


def test_the_checker_sees_each_forbidden_form():
    """The scan is not vacuous: each form the issue names is caught."""
    forms = [
        "import subprocess",
        "from subprocess import run",
        "import os\nos.execv('/bin/true', ['true'])",
        "import os\nos.execvpe('true', ['true'], {})",
        "import os\nos.spawnl(os.P_WAIT, '/bin/true', 'true')",
        "import os\nos.posix_spawn('/bin/true', ['true'], {})",
        "import os\nos.system('true')",
        "import os\nos.popen('true')",
        "from os import execv",
        "import pty\npty.spawn('true')",
        "import asyncio\nasyncio.create_subprocess_exec('true')",
        "from asyncio import create_subprocess_shell",
        "import asyncio\nasyncio.get_event_loop().subprocess_exec(None, 'true')",
        "__import__('subprocess')",
        "import importlib\nimportlib.import_module('subprocess')",
    ]
    for src in forms:
        assert starts(ast.parse(src)), src
    assert not starts(ast.parse("from autodev.host import spawn\nspawn.run(['true'], 'git')"))


def test_an_autodev_child_without_dash_p_is_refused_and_an_unknown_reason_too(tmp_path):
    with pytest.raises(ValueError, match="-P"):
        spawn.run([sys.executable, "-m", "autodev", "--version"], "autodev")
    with pytest.raises(ValueError, match="not a reason"):
        spawn.run(["true"], "because")
    # the door's autodev child: -P, and a relative PYTHONPATH entry dropped
    (tmp_path / "json.py").write_text("raise SystemExit('the working directory was on sys.path')\n")
    r = spawn.run(
        [sys.executable, "-P", "-c", "import json, sys; print(sys.path)"],
        "autodev",
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ".:" + str(tmp_path / "abs")},
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert str(tmp_path / "abs") in r.stdout and f"'{tmp_path}'" not in r.stdout
    assert subprocess.run is not spawn.run  # the door wraps, it is not an alias
