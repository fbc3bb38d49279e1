"""Loaded by every Python subprocess the tests start (PYTHONPATH): refuse any connection
outside loopback, so no test can reach a real provider even from the daemon."""

import socket

_connect = socket.socket.connect


def _guarded(self, address):
    host = address[0] if isinstance(address, tuple) else address
    if (
        self.family in (socket.AF_INET, socket.AF_INET6)
        and isinstance(host, str)
        and not (host.startswith("127.") or host in ("localhost", "::1"))
    ):
        raise ConnectionRefusedError(f"autodev tests: network access to {address!r} is forbidden")
    return _connect(self, address)


socket.socket.connect = _guarded
