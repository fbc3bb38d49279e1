"""What the agent CLIs' local model servers share (anthropic_local, gemini_local,
responses_local): a loopback HTTP server that answers from a list of steps and keeps every
request it got, and a handler with JSON answers and the request read and logged."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class LocalHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _json(self, status: int, obj: dict) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _request(self) -> tuple[str, dict]:
        """The request's path (without the query) and JSON body, kept in the server's `requests`."""
        srv: Any = self.server
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        path = self.path.split("?")[0]
        srv.requests.append({"path": path, "body": body})
        return path, body


class LocalServer(ThreadingHTTPServer):
    """Serves `handler` on 127.0.0.1 (a free port) while in a `with` block."""

    daemon_threads = True
    handler: type[LocalHandler] = LocalHandler
    base_path = ""  # what the URL a CLI is given ends with (e.g. "/v1")

    def __init__(self, steps: list[Any]):
        super().__init__(("127.0.0.1", 0), self.handler)
        self.steps = steps
        self.requests: list[dict] = []
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{self.base_path}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
