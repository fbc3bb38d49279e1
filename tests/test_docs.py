"""The documentation: README stays a short front door, every page under docs/ is in the site's
nav, the generated references equal the code, and the strict build fails on what it must."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
import typer
import yaml
from mkdocs.commands.build import build
from mkdocs.config import load_config
from mkdocs.exceptions import Abort

from autodev.cli import app
from autodev.cli.reference import cli_markdown

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
SITE = yaml.safe_load((ROOT / "mkdocs.yml").read_text())


def nav_pages(nav: list) -> list[str]:
    pages = []
    for entry in nav:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            pages += nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_readme_is_a_front_door_of_at_most_250_lines():
    text = README.read_text()
    assert len(text.splitlines()) <= 250, "README is the front door: move the reference to a page under docs/"
    # the two commands of the quick start, on a fresh machine, and the install lines a newcomer needs
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"^make \w+", quick, re.M) == ["make demo", "make test"]
    for line in ("pipx install .", "pipx ensurepath", "pipx inject autodev-team 'playwright==", "[browser]"):
        assert line in text, f"README lost its install line {line!r}"


def test_the_extras_lines_name_the_pinned_extra():
    # pipx has no extras of its own for an installed tool: it injects the extra's pin, which must
    # be the one pyproject.toml's `browser` extra holds.
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    (pin,) = extras["browser"]
    for page in (README, DOCS / "install.md"):
        text = page.read_text()
        assert f"pipx inject autodev-team '{pin}'" in text, page.name
        assert "uv tool install --force '.[browser]'" in text, page.name
    assert "docs" in extras and all("==" in p for p in extras["docs"])


def test_readme_links_reach_files_that_exist():
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text())
    local = [link for link in links if "://" not in link]
    assert len(local) >= 20, "README links to the site's pages"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"


def test_every_page_under_docs_is_in_the_nav_and_every_nav_entry_exists():
    nav = nav_pages(SITE["nav"])
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert len(nav) == len(set(nav)), "a page is in the nav twice"
    assert sorted(nav) == pages, (
        f"not in mkdocs.yml's nav: {sorted(set(pages) - set(nav))}; "
        f"in the nav but not under docs/: {sorted(set(nav) - set(pages))}"
    )


def test_the_site_builds_offline():
    # Material's Google fonts are fetched by the reader's browser, and its privacy/social
    # plugins fetch at build time: none of them.
    assert SITE["theme"]["font"] is False
    assert SITE["plugins"] == ["search"]
    assert SITE["strict"] is True


def test_cli_reference_is_generated_from_the_typer_app():
    doc = (DOCS / "cli.md").read_text()
    assert doc == cli_markdown(), "regenerate: make docs (python -m autodev.cli.reference > docs/cli.md)"
    root = typer.main.get_command(app)
    ctx = typer.Context(root, info_name="autodev")
    for name in root.list_commands(ctx):
        command = root.get_command(ctx, name)
        assert f"## `autodev {name}`" in doc
        for param in command.params:
            if param.param_type_name == "option":
                assert f"`{param.opts[0]}`" in doc.split(f"## `autodev {name}`", 1)[1]
    assert "### `autodev runs prune`" in doc and "`--older-than`" in doc


def _site(tmp_path: Path, pages: dict[str, str], nav: list) -> Path:
    """A small site with the real mkdocs.yml's theme, extensions and validation."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in pages.items():
        (docs / name).write_text(text)
    config = {**SITE, "docs_dir": str(docs), "site_dir": str(tmp_path / "site"), "nav": nav}
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    return tmp_path / "mkdocs.yml"


def test_the_strict_build_fails_on_a_broken_link_or_anchor_and_a_nav_out_of_step(
    tmp_path, monkeypatch, caplog
):
    # One build with four faults (each build copies the theme's assets: seconds); each is named.
    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")
    pages = {
        "index.md": "# Home\n\n[gone](gone.md), [there](page.md#a-section), [not there](page.md#no-such)\n",
        "page.md": "# Page\n\n## A section\n",
        "extra.md": "# Extra\n",
    }
    nav = [{"Home": "index.md"}, {"Page": "page.md"}, {"Gone": "missing.md"}]
    with pytest.raises(Abort, match="Aborted with 4 warnings in strict mode"):
        build(load_config(str(_site(tmp_path, pages, nav))))
    warnings = "\n".join(r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    assert "'gone.md', but the target is not found" in warnings
    assert "'page.md#no-such', but the doc 'page.md' does not contain an anchor '#no-such'" in warnings
    assert 'not included in the "nav" configuration' in warnings and "extra.md" in warnings
    assert "'missing.md' is included in the 'nav' configuration, which is not found" in warnings
    assert "#a-section" not in warnings


def test_benchmarks_table_is_results_json():
    """docs/benchmarks.md's table is bench/results.json's rows, failures included (issue 33)."""
    import json

    from bench import run as bench_run

    doc = bench_run.DOCS.read_text()
    assert bench_run.BEGIN in doc and bench_run.END in doc
    data = json.loads(bench_run.RESULTS.read_text())
    assert doc == bench_run.docs_text(doc, data), "regenerate: python bench/run.py --docs"


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_make_docs_serve_serves_the_site_with_its_search_index():
    import os
    import signal
    import socket
    import subprocess
    import time
    import urllib.request

    assert "`make docs-serve`" in README.read_text()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen(
        ["make", "-o", ".venv/.installed", "docs-serve", f"DOCS_ADDR=127.0.0.1:{port}"], cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/search/search_index.json", timeout=5
                ) as r:
                    index = json.loads(r.read())
                break
            except OSError:
                assert p.poll() is None, p.stderr.read() if p.stderr else ""
                assert time.monotonic() < deadline, "mkdocs serve did not answer"
                time.sleep(0.5)
        assert any(doc["location"].startswith("eval/") for doc in index["docs"])
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=30)
