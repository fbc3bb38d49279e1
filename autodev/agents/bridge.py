"""The daemon's end of the thread tools for an agent turn: a unix socket (in a private 0700
folder) on which autodev's MCP server, run by the CLI, forwards `post`, `read_thread` and
`tell_user`. Each request carries the turn's token; a request without it is refused. Requests
are handed to the turn's loop (one thread acts on the thread and the logs) and answered."""

from __future__ import annotations

import hmac
import json
import os
import queue
import secrets
import shutil
import socket
import tempfile
import threading
from pathlib import Path

from autodev.agents.events import Arrival, ToolCall
from autodev.store.journal import JsonObject, is_object

ANSWER_TIMEOUT_SEC = 600.0
MAX_REQUEST = 1 << 20


class Bridge:
    def __init__(self, events: queue.Queue[Arrival]):
        self.events = events
        self.token = secrets.token_hex(16)
        # /tmp, not the run folder: a socket path must fit in 108 bytes.
        self.dir = Path(tempfile.mkdtemp(prefix="autodev-agent-"))
        os.chmod(self.dir, 0o700)
        self.path = self.dir / "s"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(self.path))
        self.sock.listen(8)
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name="agent-bridge", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                data = b""
                while not data.endswith(b"\n") and len(data) < MAX_REQUEST:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                req: object = json.loads(data or b"{}")
                if not is_object(req) or not hmac.compare_digest(str(req.get("token", "")), self.token):
                    answer = "refused: this call does not belong to the running turn"
                else:
                    reply: queue.Queue[str] = queue.Queue(1)
                    self.events.put(ToolCall(str(req.get("tool", "")), _args(req.get("args")), reply))
                    answer = reply.get(timeout=ANSWER_TIMEOUT_SEC)
            except (OSError, ValueError, queue.Empty) as e:
                answer = f"error: autodev could not answer ({type(e).__name__})"
            try:
                conn.sendall(json.dumps({"text": answer}).encode() + b"\n")
            except OSError:
                pass

    def close(self) -> None:
        self._closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def _args(args: object) -> JsonObject:
    """The call's arguments: an object, or none (the tool's own checks name what is missing)."""
    return args if is_object(args) else {}


def call(path: str, token: str, tool: str, args: JsonObject, timeout: float = ANSWER_TIMEOUT_SEC) -> str:
    """The MCP server's side: one request, one answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(json.dumps({"token": token, "tool": tool, "args": args}).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    answer: object = json.loads(data)
    if not is_object(answer):
        raise ValueError(f"the daemon's answer is not an object: {data[:200]!r}")
    return str(answer["text"])
