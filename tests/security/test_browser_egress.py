"""Egress follows one setting (issue 20): with commandNetwork = false the browser reaches
loopback and the allowed hosts only. Two loopback servers; a host alias mapped to one of them
with Chromium's --host-resolver-rules stands for a named host, allowed or not."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest

from autodev.errors import ToolError
from autodev.harness import browser

pytestmark = pytest.mark.skipif(browser.missing() is not None, reason="no Playwright/Chromium here")


def _server(body: str):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the stdlib's name
            data = f"<html><body><p>{body}</p></body></html>".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def test_without_the_network_the_browser_reaches_loopback_and_allowed_hosts_only(tmp_path: Path):
    a, b = _server("page of allowed.test"), _server("page of blocked.test")
    rules = "--host-resolver-rules=MAP allowed.test 127.0.0.1, MAP blocked.test 127.0.0.1"
    br = browser.Browser(
        tmp_path, network=False, allow_hosts=("allowed.test",), extra_args=(rules,), timeout_sec=20
    )
    try:
        assert "HTTP 200" in br.open(f"http://allowed.test:{a.server_port}/")
        assert "page of allowed.test" in br.read()
        assert "HTTP 200" in br.open(f"http://127.0.0.1:{b.server_port}/")  # loopback
        assert "page of blocked.test" in br.read()
        try:
            out = br.open(f"http://blocked.test:{b.server_port}/")
        except ToolError as e:
            out = str(e)
        assert "could not open" in out and "ERR_" in out, out  # the request never left
    finally:
        br.close()
        a.shutdown()
        b.shutdown()


def test_the_network_setting_gives_the_flags():
    assert browser.egress_args(True) == []
    args = browser.egress_args(False, ("docs.python.org",))
    assert args[0] == f"--proxy-server={browser.DEAD_PROXY}"
    assert args[1] == "--proxy-bypass-list=localhost;127.0.0.1;[::1];docs.python.org"
