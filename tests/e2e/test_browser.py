"""The browser capability for real: headless Chromium (Debian's package) through Playwright,
against a page served by a local HTTP server. A scripted participant opens the page, reads it,
fills the form, submits it and posts what the page then says. Without a browser `start`
refuses, naming what adds it."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from autodev.harness import browser
from tests.conftest import run_dir, thread_of, write_team
from tests.e2e.helpers import ACCEPT, call, post, step, team_of_one, tool_names, tool_results, turns_of

FORM = b"""<!doctype html><html><head><title>Order form</title></head><body>
<h1>Place an order</h1>
<form action="/order" method="get">
  <label for="name">Your name</label> <input id="name" name="name">
  <button type="submit">Submit order</button>
</form></body></html>"""


class _Shop(BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self):  # noqa: N802 - the http.server API
        _Shop.seen.append(self.path)
        url = urlparse(self.path)
        if url.path == "/":
            body = FORM
        elif url.path == "/order":
            name = parse_qs(url.query).get("name", ["nobody"])[0]
            body = (
                "<!doctype html><html><head><title>Confirmed</title></head><body>"
                f"<p>Thank you, {name}! Order 42 is confirmed.</p><a href='/'>Back to the form</a>"
                "</body></html>"
            ).encode()
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def shop():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Shop)
    _Shop.seen = []
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


SAYS = "Thank you, Ada Lovelace! Order 42 is confirmed."


def test_a_participant_fills_a_form_in_a_real_browser(repo, autodev, shop):
    why = browser.missing()
    if why:
        pytest.skip(f"the browser test needs a browser: {why}; {browser.INSTALL_HINT}")
    script = (
        step("solo", call("browser_open", url=shop))
        + step("solo", call("browser_read"))
        + step("solo", call("browser_type", ref=1, text="Ada Lovelace"))
        + step("solo", call("browser_click", ref=2))
        + step("solo", call("browser_read"))
        + step("solo", call("browser_screenshot"))
        + post("solo", "done", f"The page says: {SAYS}")
        + ACCEPT
    )
    write_team(repo, team_of_one("solo", 'tools = ["browser"]'), script)
    r = autodev(repo, "start", "--foreground", "--until-idle", "place the order", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no browser tools" not in r.stderr

    reqs = turns_of(repo, "solo")[0]
    assert {
        "browser_open",
        "browser_read",
        "browser_click",
        "browser_type",
        "browser_back",
        "browser_screenshot",
    } <= tool_names(reqs[0])
    opened = tool_results(reqs[1])[-1]
    assert opened.startswith("opened Order form") and "(HTTP 200)" in opened
    first = tool_results(reqs[2])[-1]
    assert "Place an order" in first
    assert "[1] input label='Your name'" in first and "[2] button type=submit 'Submit order'" in first
    assert tool_results(reqs[3])[-1] == "typed 12 characters into [1]"
    assert "now at Confirmed" in tool_results(reqs[4])[-1]
    after = tool_results(reqs[5])[-1]
    assert SAYS in after and "[1] a 'Back to the form' → /" in after
    shot = tool_results(reqs[6])[-1]
    assert shot.startswith("screenshot saved: ")
    path = shot.removeprefix("screenshot saved: ")
    assert path.startswith(str(run_dir(repo))) and open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert "/order?name=Ada+Lovelace" in _Shop.seen
    done = [p for p in thread_of(repo) if p["kind"] == "done"]
    assert done[0]["text"] == f"The page says: {SAYS}" and SAYS in after


def test_without_a_browser_start_refuses_with_the_fix(repo, inproc):
    script = post("solo", "done", "no browser here") + ACCEPT
    write_team(repo, team_of_one("solo", 'tools = ["browser"]'), script)
    env = {"AUTODEV_CHROMIUM": "/nonexistent/chromium"}
    r = inproc(repo, "start", "--foreground", "--until-idle", "look at the site", env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "solo uses the browser capability" in r.stderr and "no Chromium was found" in r.stderr
    assert "apt-get install chromium" in r.stderr and 'take "browser" out of their tools' in r.stderr
    assert not thread_of(repo)
