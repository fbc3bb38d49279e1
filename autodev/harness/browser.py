"""The browser capability: Playwright for Python driving the system's Chromium, headless.

Playwright's own browser download is not used: it drives the Chromium the system has (Debian's
`chromium` package, or the file named by $AUTODEV_CHROMIUM). Each participant granted `browser`
gets its own browser, started at its first call and closed with the daemon.

``browser_read()`` marks every visible interactive element of the page with a number, its
``ref``; ``browser_click(ref)`` and ``browser_type(ref, ...)`` act on those. A ref is valid
until the page changes; reading again gives fresh ones.

Every call is cut at the turn's deadline or on `stop`: Playwright's waits get the time left, and
a watch kills the browser's process group (found by a marker in its command line) when a call
outlives it, so even a page script that never returns cannot hold the turn.
"""

from __future__ import annotations

import importlib
import os
import signal
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from autodev.errors import EXTRAS, ToolError, extra_fix
from autodev.harness.chromium import chromium_path
from autodev.harness.deadline import Watch
from autodev.host.procgroup import kill_group

if TYPE_CHECKING:
    from playwright.sync_api import Browser as PwBrowser
    from playwright.sync_api import Locator, Page, Playwright

    from autodev.harness.scope import Scope

PLAYWRIGHT = EXTRAS["browser"][0]
PLAYWRIGHT_FIX = extra_fix("browser").replace("add it", "add Playwright", 1)
INSTALL_HINT = (
    "install Chromium (Debian/Ubuntu: `apt-get install chromium`, or set AUTODEV_CHROMIUM to its path); "
    + PLAYWRIGHT_FIX
)
CHECK_TIMEOUT_ENV = "AUTODEV_BROWSER_CHECK_TIMEOUT"  # seconds the launch check may take (default 60)
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
_TEXT_CAP = 8000
_ELEMENTS_CAP = 150

# Marks the visible interactive elements with data-autodev-ref and describes them.
_MARK = """() => {
  const sel = 'a[href], button, input, select, textarea, summary, [role=button], [role=link], '
    + '[role=checkbox], [role=tab], [onclick], [contenteditable=""], [contenteditable=true]';
  document.querySelectorAll('[data-autodev-ref]').forEach(e => e.removeAttribute('data-autodev-ref'));
  const out = [];
  let n = 0;
  for (const e of document.querySelectorAll(sel)) {
    const r = e.getBoundingClientRect();
    const st = getComputedStyle(e);
    if (e.type === 'hidden' || st.visibility === 'hidden' || st.display === 'none'
        || (r.width === 0 && r.height === 0)) continue;
    n += 1;
    e.setAttribute('data-autodev-ref', String(n));
    const label = (e.labels && e.labels.length && e.labels[0].innerText)
      || e.getAttribute('aria-label') || e.getAttribute('placeholder') || e.getAttribute('name') || '';
    out.push({ref: n, tag: e.tagName.toLowerCase(), type: e.getAttribute('type') || '',
      text: (e.innerText || '').trim().slice(0, 80), value: (e.value || '').toString().slice(0, 80),
      label: label.trim().slice(0, 80), href: e.getAttribute('href') || ''});
  }
  return out;
}"""


def missing() -> str | None:
    """Why the browser tools cannot run on this machine (found without starting anything), or
    None when what they need is there."""
    import importlib.util

    if importlib.util.find_spec("playwright") is None:
        return "Playwright for Python is not installed in autodev's environment"
    if chromium_path() is None:
        return "no Chromium was found"
    return None


CHROMIUM_FIX = (
    "install Chromium (Debian/Ubuntu: `apt-get install chromium`), or set AUTODEV_CHROMIUM to its path"
)


def fix_for(why: str) -> str:
    """The fix for what `launch_problem` found."""
    if "Playwright for Python is not installed" in why:
        return PLAYWRIGHT_FIX
    if "no Chromium was found" in why:
        return CHROMIUM_FIX
    return f"check that `{chromium_path()} --headless --no-sandbox about:blank` starts here; " + INSTALL_HINT


def launch_problem(timeout: float | None = None) -> str | None:
    """Why the browser tools cannot run, found the way a participant's first call would: Playwright
    imported and the Chromium it finds launched (headless) and closed, in a child process cut
    after `timeout` seconds. None when it works. `doctor` and `start` ask this."""
    import sys

    from autodev.host import spawn
    from autodev.host.hostproc import PYTHON_SAFE

    why = missing()
    if why:
        return why
    limit = timeout if timeout is not None else float(os.environ.get(CHECK_TIMEOUT_ENV, "60"))
    try:
        r = spawn.run(
            [sys.executable, *PYTHON_SAFE, "-m", "autodev.harness.browser"],
            "autodev",
            capture_output=True,
            text=True,
            timeout=limit,
            stdin=spawn.DEVNULL,
            start_new_session=True,
        )
    except spawn.TimeoutExpired:
        return f"Chromium ({chromium_path()}) did not start within {limit:g} s"
    except OSError as e:
        return f"the browser check could not run: {e}"
    if r.returncode != 0:
        said = (r.stderr.strip() or r.stdout.strip() or f"exit {r.returncode}").splitlines()[0][:300]
        if said.startswith("Playwright for Python is not installed"):
            return said
        return f"Chromium ({chromium_path()}) could not be started by Playwright: {said}"
    return None


def egress_args(network: bool, allow_hosts: tuple[str, ...] = ()) -> list[str]:
    """Chromium's flags for the run's network policy. Without the network every request
    (pages, redirects, websockets, prefetches, IP literals) goes to a proxy that is not there,
    except loopback and the allowed hosts, which bypass it."""
    if network:
        return []
    bypass = ["localhost", "127.0.0.1", "[::1]", *allow_hosts]
    return [f"--proxy-server={DEAD_PROXY}", "--proxy-bypass-list=" + ";".join(bypass)]


DEAD_PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens, so the request fails


class Browser:
    """One headless Chromium with one page, started at the first call."""

    def __init__(
        self,
        shots: Path,
        *,
        name: str = "browser",
        timeout_sec: float = 30.0,
        network: bool = True,
        allow_hosts: tuple[str, ...] = (),
        extra_args: tuple[str, ...] = (),
    ):
        """`network=False` (commandNetwork = false): loopback only, plus `allow_hosts`."""
        self.args = [*CHROMIUM_ARGS, *egress_args(network, allow_hosts), *extra_args]
        self.shots = Path(shots)
        self.name = name
        self.timeout_ms = timeout_sec * 1000
        self._call_ms = self.timeout_ms  # this call's share: less when the turn ends sooner
        self._mark = f"--autodev-browser={uuid.uuid4().hex}"  # finds its processes to kill them
        self._pw: Playwright | None = None
        self._browser: PwBrowser | None = None
        self._page: Page | None = None
        self._shot = 0

    def run_check(self) -> None:
        """Launch Chromium and open a blank page (ToolError naming what failed)."""
        self._page_or_open()

    def _page_or_open(self) -> Page:
        if self._page is None:
            from playwright.sync_api import sync_playwright

            path = chromium_path()
            if path is None:
                raise ToolError(f"the browser is not available: no Chromium was found; {INSTALL_HINT}")
            self._pw = pw = sync_playwright().start()
            try:
                self._browser = pw.chromium.launch(
                    executable_path=path, headless=True, args=[*self.args, self._mark]
                )
            except Exception as e:  # noqa: BLE001 - the launch failure, told to the model
                self.close()
                raise ToolError(f"the browser could not start: {str(e).splitlines()[0]}") from None
            self._page = page = self._browser.new_page()
            page.set_default_timeout(self._call_ms)
        return self._page

    def _current(self) -> Page:
        if self._page is None or self._page.url in ("", "about:blank"):
            raise ToolError("no page is open; call browser_open(url) first")
        return self._page

    def _where(self, page: Page) -> str:
        return f"{page.title() or '(no title)'} — {page.url}"

    def _element(self, page: Page, ref: int) -> Locator:
        loc = page.locator(f'[data-autodev-ref="{ref}"]')
        if loc.count() == 0:
            raise ToolError(
                f"no element with ref {ref} on this page; call browser_read() for the current refs"
            )
        return loc.first

    def _settle(self, page: Page) -> None:
        try:
            page.wait_for_load_state("load", timeout=self._call_ms)
        except Exception:  # noqa: BLE001 - a page that keeps loading is still usable
            pass

    def run(self, method: str, ws: Scope | None, **kwargs: object) -> str:
        """One tool call, cut at the turn's deadline or on `stop` (`ws`: the turn's Workspace).
        A cut call kills the browser; the next call starts a fresh one."""
        seconds = self.timeout_ms / 1000
        if ws is not None:
            seconds = ws.time_for(seconds)
        self._call_ms = seconds * 1000
        if self._page is not None:
            self._page.set_default_timeout(self._call_ms)
        watch = Watch(self._kill, seconds + 2, ws.stopping_now if ws is not None else lambda: False)
        try:
            out = getattr(self, method)(**kwargs)
        except Exception:
            if not watch.finish():
                raise
        else:
            if not watch.finish():
                return out
        self.close()
        raise ToolError(
            f"browser_{method}: {watch.finish()}; the browser was closed and starts afresh at the next call"
        )

    def _kill(self) -> None:
        """Kill this browser's process group (Playwright starts Chromium as a group leader)."""
        for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if self._mark.encode() not in f.read().split(b"\0"):
                        continue
                pgid = os.getpgid(int(entry))
                if pgid != os.getpgrp():
                    kill_group(pgid)
                else:
                    os.kill(int(entry), signal.SIGKILL)
            except (OSError, ValueError):
                continue

    # -- the tools

    def open(self, url: str) -> str:
        scheme = urlparse(url).scheme
        if scheme not in ("http", "https"):
            raise ToolError(f"browser_open: give an http:// or https:// URL, got {url!r}")
        page = self._page_or_open()
        try:
            response = page.goto(url)
        except Exception as e:  # noqa: BLE001
            raise ToolError(f"browser_open: could not open {url}: {str(e).splitlines()[0]}") from None
        status = f" (HTTP {response.status})" if response is not None else ""
        return f"opened {self._where(page)}{status}; call browser_read() to see the page"

    def read(self) -> str:
        page = self._current()
        elements = page.evaluate(_MARK)
        text = page.inner_text("body").strip()
        if len(text) > _TEXT_CAP:
            text = text[:_TEXT_CAP] + f"\n[... page text cut at {_TEXT_CAP} characters]"
        lines = [self._where(page), "", text or "(no text)", ""]
        if elements:
            lines.append("Interactive elements (use the ref with browser_click / browser_type):")
            for e in elements[:_ELEMENTS_CAP]:
                lines.append(_describe(e))
            if len(elements) > _ELEMENTS_CAP:
                lines.append(f"[{len(elements) - _ELEMENTS_CAP} more not listed]")
        else:
            lines.append("(no interactive elements)")
        return "\n".join(lines)

    def click(self, ref: int) -> str:
        page = self._current()
        try:
            self._element(page, ref).click()
        except ToolError:
            raise
        except Exception as e:  # noqa: BLE001
            raise ToolError(f"browser_click: could not click ref {ref}: {str(e).splitlines()[0]}") from None
        self._settle(page)
        return f"clicked [{ref}]; now at {self._where(page)}; call browser_read() to see the page"

    def type(self, ref: int, text: str, submit: bool) -> str:
        page = self._current()
        try:
            el = self._element(page, ref)
            el.fill(text)
            if submit:
                el.press("Enter")
        except ToolError:
            raise
        except Exception as e:  # noqa: BLE001
            raise ToolError(
                f"browser_type: could not type into ref {ref}: {str(e).splitlines()[0]}"
            ) from None
        if submit:
            self._settle(page)
            return f"typed into [{ref}] and submitted; now at {self._where(page)}"
        return f"typed {len(text)} characters into [{ref}]"

    def back(self) -> str:
        page = self._current()
        if page.go_back() is None:
            return f"no earlier page; still at {self._where(page)}"
        self._settle(page)
        return f"back at {self._where(page)}"

    def screenshot(self) -> str:
        page = self._current()
        self.shots.mkdir(parents=True, exist_ok=True)
        self._shot += 1
        path = self.shots / f"{self.name}-{os.getpid()}-{self._shot}.png"
        page.screenshot(path=str(path))
        return f"screenshot saved: {path}"

    def close(self) -> None:
        browser, pw = self._browser, self._pw
        for end in (browser.close if browser else None, pw.stop if pw else None):
            if end is None:
                continue
            try:
                end()
            except Exception:  # noqa: BLE001 - closing what may already be gone
                pass
        self._pw = self._browser = self._page = None


def _describe(e: Mapping[str, object]) -> str:
    """One interactive element as `_MARK` found it (its fields are strings and a number)."""
    kind = str(e["tag"]) + (f" type={e['type']}" if e["type"] else "")
    parts = [f"[{e['ref']}] {kind}"]
    if e["label"]:
        parts.append(f"label={e['label']!r}")
    if e["text"]:
        parts.append(repr(e["text"]))
    if e["value"] and e["tag"] in ("input", "textarea", "select"):
        parts.append(f"value={e['value']!r}")
    if e["href"]:
        parts.append(f"→ {e['href']}")
    return " ".join(parts)


def _check_launch() -> int:
    """`python -m autodev.harness.browser`: launch the Chromium `chromium_path()` finds through
    Playwright, open a blank page, close it; exit 0 when that works (launch_problem's child)."""
    import sys

    try:
        importlib.import_module("playwright.sync_api")  # importable, not only findable
    except ImportError as e:
        print(f"Playwright for Python is not installed in autodev's environment ({e})", file=sys.stderr)
        return 1
    b = Browser(Path(os.devnull), name="check", timeout_sec=30)
    try:
        b.run_check()
    except ToolError as e:
        print(str(e), file=sys.stderr)
        return 1
    finally:
        b.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(_check_launch())
