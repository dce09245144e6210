"""A local HTTP server that records JSON posts: the PagerDuty Events API v2 and ticket webhook stand-in.

It answers like PagerDuty's ``/v2/enqueue`` (202 with ``status: success`` and the dedup key), and
any other path with 200, so one server can stand in for both receivers of
``deploy/alertmanager/alertmanager.yml``. Tests read what arrived with :meth:`RecordingServer.received`
or wait for it with :meth:`RecordingServer.wait_for`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PAGERDUTY_PATH = "/v2/enqueue"
TICKET_PATH = "/ticket"


@dataclass(frozen=True)
class Received:
    path: str
    body: Any
    at: float
    """``time.time()`` when the request arrived."""


class RecordingServer:
    def __init__(self, server: ThreadingHTTPServer) -> None:
        self._server = server
        self._lock = threading.Lock()
        self._items: list[Received] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def url(self, path: str) -> str:
        return self.base_url + path

    def record(self, item: Received) -> None:
        with self._lock:
            self._items.append(item)

    def received(self, path: str | None = None) -> list[Received]:
        with self._lock:
            return [r for r in self._items if path is None or r.path == path]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def wait_for(self, path: str, predicate: Callable[[Any], bool] = lambda _: True, *,
                 timeout: float = 60, what: str = "a request") -> Received:
        """The first request on ``path`` whose JSON body satisfies ``predicate``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for r in self.received(path):
                if predicate(r.body):
                    return r
            time.sleep(0.1)
        seen = [r.body for r in self.received()]
        raise TimeoutError(f"no {what} on {path} within {timeout}s; received: {json.dumps(seen)[:3000]}")


def _handler(owner: list[RecordingServer]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
            owner[0].record(Received(self.path, body, time.time()))
            if self.path == PAGERDUTY_PATH:
                dedup = body.get("dedup_key", "") if isinstance(body, dict) else ""
                reply = {"status": "success", "message": "Event processed", "dedup_key": dedup}
                self._reply(202, reply)
            else:
                self._reply(200, {})

        def _reply(self, status: int, obj: object) -> None:
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

    return Handler


@contextmanager
def recording_server() -> Iterator[RecordingServer]:
    """Start the stand-in on a free loopback port; stop it on exit."""
    owner: list[RecordingServer] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(owner))
    server.daemon_threads = True
    owner.append(RecordingServer(server))
    thread = threading.Thread(target=server.serve_forever, name="recording-server", daemon=True)
    thread.start()
    try:
        yield owner[0]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
