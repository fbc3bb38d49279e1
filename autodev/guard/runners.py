"""Programs that run other commands or code the command line does not show (issue 29).

When any gateRequired pattern exists, a program that may run anything counts as opaque
(`opaque.opaque_parts`, decided by gateOpaque) with a reason naming what it runs: build and task
runners run the recipes of a repository file (`make`, `npm run`, `tox`, ...), test runners load
the repository's code (`pytest` and its `conftest.py`), and some programs run commands from their
own arguments in a language the guard does not read (awk's `system()`, sed's `e`, vim's `!`).

Where a program is given a shell command on the command line (`tar --to-command=...`,
`ssh -o ProxyCommand=...`, `rsync -e ...`), `shell_code` returns it and `shellnested` reads it as a
script, so the guard sees into it as it sees into `sh -c`.

Environment that makes a program load code from elsewhere (`PYTHONPATH`, `NODE_OPTIONS`,
`LD_PRELOAD`, ...) is `loads_code`, refused as opaque by `shellnested.assignment`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from autodev.guard import langs
from autodev.guard.shellwords import UnparseableCommand, Word, basename
from autodev.guard.shellwrappers import option_values

# Variables that make a program load code or settings the command line does not show, whatever
# their value (`loads_code` has the ones that do so only for some values).
ENV_LOADS_CODE = frozenset(
    {
        *("LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "GCONV_PATH", "BASH_ENV", "ZDOTDIR", "MAKEFLAGS"),
        *("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE", "NODE_PATH"),
        *("PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB", "RUBYLIB", "LESSOPEN", "LESSCLOSE"),
        "HOME",  # ~/.gitconfig, Python's user site (usercustomize), ...
        "XDG_CONFIG_HOME",  # git's config
    }
)
# PATH entries that cannot hold a program written in the run (another entry could shadow any name).
_SYSTEM_PATH = {
    "/usr/bin",
    "/bin",
    "/usr/sbin",
    "/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
    "$PATH",
    "${PATH}",
}
_SOME_VALUES = {
    "PS4": re.compile(r"\$\(|`"),  # expanded, $(...) included, by `bash -x`
    "PYTHONWARNINGS": re.compile(
        r"^[^:,]*:[^:,]*:[^:,]*\.|,[^:,]*:[^:,]*:[^:,]*\."
    ),  # mod.Category is imported
    "PYTHONBREAKPOINT": re.compile(r"^(?!0$)."),  # a callable to import
    "NODE_OPTIONS": re.compile(r"(^|\s)(-r|--require|--import|--loader|--experimental-loader)\b"),
    "RUBYOPT": re.compile(r"(^|\s)-[A-Za-z]*[rI]"),
}


def loads_code(name: str, value: Word) -> str | None:
    """Why setting `name` to `value` makes programs load code the guard cannot read, or None."""
    if not value.text:
        return None
    if name in ENV_LOADS_CODE or (
        name in _SOME_VALUES and (value.dynamic or _SOME_VALUES[name].search(value.text))
    ):
        return f"`{name}` makes programs load code the guard cannot read"
    if name == "PATH" and any(entry not in _SYSTEM_PATH for entry in value.text.split(":")):
        return f"`PATH={value.raw}` may make a name run a program written in the run"
    return None


_INFO = {"--version", "-V", "-v", "--help", "-h", "help", "version"}

# Programs that run what a repository file defines, whatever their arguments: name -> what.
_RECIPES: dict[str, str] = {
    **dict.fromkeys(
        ("make", "gmake", "bmake", "remake", "pmake", "colormake"), "the recipes of the Makefile"
    ),
    **dict.fromkeys(("qmake", "xmake", "premake5", "zig", "dune"), "the project's build files' code"),
    **dict.fromkeys(
        ("dotnet", "mix", "rebar3", "lein", "stack", "cabal", "swift"), "the project's build and code"
    ),
    "bundle": "the Gemfile's Ruby",
    "composer": "the scripts of composer.json",
    "build": "the project's build backend (setup.py)",  # python -m build
    "ninja": "the commands of build.ninja",
    "just": "the recipes of the justfile",
    "task": "the tasks of Taskfile.yml",
    "mage": "the targets of the magefile",
    "cmake": "the CMake files' commands (execute_process, custom commands)",
    "meson": "the meson.build files' commands",
    "scons": "the SConstruct file's Python",
    **dict.fromkeys(("bazel", "bazelisk"), "the BUILD files' rules"),
    "gradle": "the Gradle build scripts",
    "mvn": "the Maven build's plugins",
    "ant": "the build.xml targets",
    "sbt": "the sbt build",
    "rake": "the Rakefile's Ruby",
    **dict.fromkeys(("invoke", "inv"), "the tasks.py file's Python"),
    "tox": "the commands of tox.ini",
    "nox": "the noxfile's Python",
    "pre-commit": "the hooks of .pre-commit-config.yaml",
    "lefthook": "the hooks of lefthook.yml",
    "nx": "the project's targets",
    "turbo": "the package.json scripts",
    "lerna": "the package.json scripts",
    "gulp": "the gulpfile's JavaScript",
    "grunt": "the Gruntfile's JavaScript",
    **dict.fromkeys(
        ("pytest", "py.test", "pytest-3", "py.test-3"), "the repository's test code and conftest.py files"
    ),
    **dict.fromkeys(
        ("jest", "vitest", "mocha", "playwright"), "the repository's tests and JavaScript config"
    ),
    "eslint": "the JavaScript of eslint.config.js and its plugins",
    "webpack": "the JavaScript of webpack.config.js",
    "vite": "the JavaScript of vite.config.js",
    "rollup": "the JavaScript of rollup.config.js",
    "mypy": "the plugins named in the repository's mypy config",
    "pylint": "the plugins named in the repository's pylint config",
    "flake8": "the local plugins named in the repository's flake8 config",
    **dict.fromkeys(("npx", "pnpx", "bunx", "uvx", "pipx"), "a package's program (local or downloaded)"),
    **dict.fromkeys(("poetry", "pdm", "hatch"), "the project's scripts and build backend"),
    **dict.fromkeys(("pipenv", "rye", "uv"), "the project's scripts and build backend"),
    "pixi": "the project's tasks",
    "conda": "a command in an environment",
    "direnv": "the .envrc file",
    # programs that run commands from their own words or input, in a language the guard does not read
    **dict.fromkeys(
        ("vim", "vi", "nvim", "ex", "view", "vimdiff", "gvim", "evim", "vim.basic", "vim.tiny", "vim.nox"),
        "`:!` commands and vimrc files",
    ),
    **dict.fromkeys(("editor", "sensible-editor", "vim.gtk3"), "`:!` commands and vimrc files"),
    **dict.fromkeys(("ed", "emacs", "emacsclient"), "shell commands from its script (`!`, `shell-command`)"),
    **dict.fromkeys(("gdb", "lldb"), "`shell` commands from its options and init files"),
    **dict.fromkeys(("entr", "watchexec", "nodemon"), "a command each time files change"),
}
# Package managers run the package.json scripts (and install scripts) for every subcommand but
# these; `yarn NAME` runs the script NAME.
_PM_READ_ONLY = frozenset(
    {
        *("help", "ls", "list", "ll", "la", "view", "info", "show", "outdated", "search", "config"),
        *("get", "whoami", "root", "prefix", "bin", "audit", "explain", "why", "fund", "ping", "query"),
        *("docs", "home", "repo", "bugs", "doctor", "cache", "owner", "dist-tag", "pkg", "licenses"),
        *("versions", "dir", "store", "completion", "sbom"),
    }
)
_PACKAGE_MANAGERS = {"npm", "pnpm", "yarn", "bun", "corepack"}
_INSTALLS = {"install", "i", "in", "ci", "add", "rebuild", "rb", "clean-install", "update", "up", "upgrade"}
_CARGO_READ_ONLY = frozenset(
    {
        *("metadata", "tree", "search", "fmt", "locate-project", "pkgid", "verify-project", "new"),
        *("init", "generate-lockfile", "update", "fetch", "vendor", "clean", "add", "remove", "info"),
        *("login", "logout", "owner", "yank", "read-manifest"),
    }
)
_GO_RUNS = {"run", "test", "generate", "tool", "vet"}
_PIP = re.compile(r"^pip[0-9.]*$")
_SSH_RUNS = {"proxycommand", "localcommand", "knownhostscommand", "ssh_command"}
_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash"}


def why(words: tuple[Word, ...]) -> str | None:
    """Why this command may run anything the guard cannot see, or None for an ordinary one."""
    name = basename(words[0].text)
    args = words[1:]
    if re.fullmatch(r"python[0-9.]*|pypy[0-9.]*", name):
        if any(loads_code("PYTHONWARNINGS", w) for w in option_values(args, "W", frozenset())):
            return "`python -W` names a warning category in a module, which Python imports"
        mod = _python_module(args)
        if mod is None:
            return None
        name, args = mod[0].replace("_", "-"), mod[1]  # `python -m pytest` is `pytest`
        if name == "pip":
            return _pip(args)
        if name == "unittest":
            return "`python -m unittest` runs the repository's test code"
        if name not in _RECIPES:
            return None
    if args and all(w.text in _INFO for w in args):
        return None
    if name in _RECIPES or name in ("gradlew", "mvnw"):
        return f"`{name}` runs {_RECIPES.get(name, 'the project build scripts')}"
    if name in _PACKAGE_MANAGERS:
        return _package_manager(name, args)
    if name == "deno" and any(w.text == "task" for w in args[:1]):
        return "`deno task` runs the tasks of deno.json"
    if name == "cargo":
        return _cargo(args)
    if name == "go":
        return _go(args)
    if _PIP.match(name):
        return _pip(args)
    if name in langs.AWK:
        return langs.awk(name, args)
    if name in langs.SED:
        return langs.sed(args)
    if name in ("tar", "bsdtar", "gtar"):
        return _tar_scripts(args)
    return _from_own_words(name, args)


def _from_own_words(name: str, args: Sequence[Word]) -> str | None:
    """Programs told by their own options or words to run what the guard does not read: cron
    entries, package.json scripts, an ssh config, preloaded files, an interactive shell's rc."""
    if name == "crontab" and not any(w.text in ("-l", "-r") for w in args):
        return "`crontab` installs commands that cron runs later"
    if name in ("node", "nodejs") and any(w.text.startswith("--run") for w in args):
        return f"`{name} --run` runs package.json scripts"
    if name in ("ssh", "scp", "sftp", "autossh", "sshfs"):
        own = [w for w in args if not w.text.startswith("-o")]  # -oForwardAgent is not -F
        if option_values(own, "F", frozenset()):
            return f"`{name} -F` reads a config file that may run commands (ProxyCommand, Match exec)"
    if name in ("node", "nodejs", "bun", "deno", "ruby") and any(
        v.dynamic or v.text.startswith((".", "/"))
        for v in option_values(
            args, "r", frozenset({"--require", "--import", "--loader", "--experimental-loader"})
        )
    ):
        return f"`{name}` preloads a file the guard does not read"
    if name in ("perl", "ruby") and option_values(args, "I", frozenset()):
        return f"`{name} -I` puts a folder first on the module path"
    if name in _SHELLS and any(
        re.fullmatch(r"-[a-zA-Z]*i[a-zA-Z]*", w.text) or w.text == "--interactive"
        for w in args[: next((k for k, w in enumerate(args) if not w.text.startswith("-")), len(args))]
    ):
        return f"`{name} -i` reads the files an interactive shell sources (~/.bashrc, $ENV)"
    if name in ("less", "more", "most") and any(
        w.text.startswith("+") and re.search(r"[!|]", w.text) for w in args
    ):
        return f"`{name} +...` runs an initial command that starts a shell command"
    return None


def _cargo(args: Sequence[Word]) -> str | None:
    sub = next((w.text for w in args if not w.text.startswith(("-", "+"))), "")
    if sub and sub not in _CARGO_READ_ONLY:
        return f"`cargo {sub}` runs the crate's build scripts (build.rs) and code"
    return None


def _go(args: Sequence[Word]) -> str | None:
    sub = next((w.text for w in args if not w.text.startswith("-")), "")
    execs = ("-toolexec", "--toolexec", "-exec", "--exec", "-vettool", "--vettool")
    if sub in _GO_RUNS or any(w.text.split("=")[0] in execs for w in args):
        what = (
            "the commands of its //go:generate lines" if sub == "generate" else "the module's code or tools"
        )
        return f"`go {sub}` runs {what}"
    return None


def _python_module(args: Sequence[Word]) -> tuple[str, tuple[Word, ...]] | None:
    """(the top package `python -m MOD` runs, the words after MOD), or None."""
    k = 0
    while k < len(args):
        t = args[k].text
        if not t.startswith("-") or t in ("-", "--") or t.startswith("--"):
            return None
        flags = re.match(r"-[bBdEhiIOPqsSuvVx]*", t)
        rest = t[flags.end() if flags else 1 :]
        if rest.startswith("m"):  # -m pytest, -Im pytest, -mpytest
            if len(rest) > 1:
                return rest[1:].split(".")[0], tuple(args[k + 1 :])
            return (args[k + 1].text.split(".")[0], tuple(args[k + 2 :])) if k + 1 < len(args) else None
        if rest[:1] in ("W", "X"):  # -W arg, -X opt: their value is the next word unless attached
            k += 1 if len(rest) > 1 else 2
            continue
        if rest:  # -c and the like: not a module
            return None
        k += 1
    return None


def _package_manager(name: str, args: Sequence[Word]) -> str | None:
    sub = next((w.text for w in args if not w.text.startswith("-")), "")
    if sub in _PM_READ_ONLY:
        return None
    if (sub in _INSTALLS or not sub) and any(w.text == "--ignore-scripts" for w in args):
        return None
    if not sub and name != "yarn":
        return None  # npm, pnpm, bun alone print their help; yarn alone installs
    label = f"{name} {sub}".strip()
    what = "install scripts" if sub in _INSTALLS or not sub else "scripts or packages' programs"
    return f"`{label}` runs package.json {what}"


def _pip(args: Sequence[Word]) -> str | None:
    """pip builds a local project (setup.py, a build backend) with `install -e`, a path or `-r`."""
    if not any(w.text in ("install", "wheel", "download") for w in args):
        return None
    local = [
        w.text
        for w in args
        if w.text in ("-e", "--editable", "-r", "--requirement")
        or w.text.startswith(("-e", "--editable=", "-r", "--requirement=", ".", "/", "file:"))
        or w.dynamic
    ]
    if not local:
        return None
    return f"`pip install {local[0]}` builds a local project, which runs its setup code"


def _tar_scripts(args: Sequence[Word]) -> str | None:
    """tar runs a script file for a new volume (`-F FILE`, `--info-script`, `--new-volume-script`)."""
    files = option_values(args, "F", frozenset({"--info-script", "--new-volume-script"}))
    old_style = args and not args[0].text.startswith("-") and re.fullmatch(r"[A-Za-z]+", args[0].text)
    if files or (old_style and re.search(r"[FI]", args[0].text)):
        return "`tar` runs a program or volume script the guard does not read"
    return None


def shell_code(words: tuple[Word, ...]) -> list[Word]:
    """Shell commands this command runs that are written in its own words (read as scripts)."""
    name = basename(words[0].text)
    args = words[1:]
    found: list[Word] = []
    if name == "mosh":
        found += option_values(args, "", frozenset({"--ssh"}))
    if name in ("tar", "bsdtar", "gtar"):
        found += option_values(
            args, "I", frozenset({"--to-command", "--use-compress-program", "--rsh-command", "--rmt-command"})
        )
        for v in option_values(args, "", frozenset({"--checkpoint-action"})):
            if v.text.startswith("exec="):
                found.append(Word(v.text[5:], v.raw, v.dynamic))
    elif name in ("ssh", "scp", "sftp", "autossh", "sshfs"):
        for v in option_values(args, "o", frozenset()):
            for item in v.text.split(",") if name == "sshfs" else [v.text]:  # sshfs -o a=1,ssh_command=X
                key, _, value = re.sub(r"\s*=\s*|\s+", "=", item.strip(), count=1).partition("=")
                if key.lower() in _SSH_RUNS and value.lower() != "none":
                    found.append(Word(value, v.raw, v.dynamic))
        if name in ("scp", "sftp"):
            found += option_values(args, "SD" if name == "sftp" else "S", frozenset())
    elif name == "rsync":
        found += option_values(args, "e", frozenset({"--rsh"}))
    elif name == "zip":
        found += option_values(args, "", frozenset({"--unzip-command"}))
        found += [args[k + 1] for k, w in enumerate(args[:-1]) if w.text == "-TT"]
    elif name == "man":
        found += option_values(args, "P", frozenset({"--pager"}))
    elif name in ("strace", "ltrace"):  # -o '|cmd' pipes the trace to a command
        found += [
            Word(v.text[1:], v.raw, v.dynamic)
            for v in option_values(args, "o", frozenset({"--output"}))
            if v.text.startswith(("|", "!"))
        ]
    for v in found:
        if v.dynamic:
            raise UnparseableCommand(f"`{name}` runs a command only known at run time ({v.raw})", opaque=True)
    return found
