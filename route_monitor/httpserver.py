"""Serve ``/metrics`` from an injected registry, in a background thread.

Rendering a large exposition takes CPU time; doing it in a thread rather than on the event
loop keeps probe scheduling undisturbed while Prometheus scrapes. The collectors it calls
read the engine's state without locks; they take consistent snapshots of each series.

``render`` (e.g. :meth:`ProbeMetrics.exposition`, the fast path for thousands of monitors)
produces the full page; a ``name[]`` filter in the query falls back to client_python's
rendering of just those metrics. Always the text format (0.0.4), which every Prometheus reads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest


def _handler(registry: CollectorRegistry, render: Callable[[], bytes]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path not in ("/metrics", "/"):
                self._send(404, b"not found: try /metrics\n", "text/plain; charset=utf-8")
                return
            wanted = parse_qs(url.query).get("name[]")
            body = generate_latest(registry.restricted_registry(wanted)) if wanted else render()
            self._send(200, body, CONTENT_TYPE_LATEST)

        def _send(self, code: int, body: bytes, content_type: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # no access log on stderr
            pass

    return Handler


class MetricsServer:
    def __init__(self, registry: CollectorRegistry, host: str = "127.0.0.1", port: int = 8080, *,
                 render: Callable[[], bytes] | None = None) -> None:
        self.registry = registry
        self.host = host
        self.port = port
        self._render = render or (lambda: generate_latest(registry))
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Bind and serve; raises OSError when the address is taken. Port 0 picks a free port."""
        server = ThreadingHTTPServer((self.host, self.port), _handler(self.registry, self._render))
        server.daemon_threads = True
        self._server = server
        self.port = int(server.server_address[1])
        self._thread = threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{self.port}/metrics"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
